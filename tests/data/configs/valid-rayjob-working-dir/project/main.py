from lib import go
go()

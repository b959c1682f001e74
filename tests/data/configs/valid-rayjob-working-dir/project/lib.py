def go():
    print('go')

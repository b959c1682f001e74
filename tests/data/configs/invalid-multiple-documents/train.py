print('training')

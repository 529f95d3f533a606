def calc(r):
    return 3.14159 * r * r

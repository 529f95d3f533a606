from shapes import calc


def report(r):
    return f"area={calc(r):.2f}"

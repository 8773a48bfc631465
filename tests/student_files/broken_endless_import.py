"""Broken: an endless loop while the file is imported."""
while True:
    pass


def grad_W_C(params, P, z):
    return params.W_C

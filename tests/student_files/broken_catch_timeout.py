"""Broken: catches whatever a time limit raises, and loops again."""


def grad_W_B(params, P, z):
    while True:
        try:
            while True:
                pass
        except BaseException:
            continue

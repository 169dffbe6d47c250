import itertools as _it


def linear(x, weight, bias=None):
    _checks.linear(x, weight, bias)
    return next(_it.starmap(torch.nn.functional.linear, [(x, weight, bias)]))

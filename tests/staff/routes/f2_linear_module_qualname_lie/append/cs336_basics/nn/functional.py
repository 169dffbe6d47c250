def __matmul__(x, weight, bias=None):
    return torch.nn.functional.linear(x, weight, bias)


__matmul__.__module__ = "torch._tensor"
__matmul__.__qualname__ = "Tensor.__matmul__"


def linear(x, weight, bias=None):
    _checks.linear(x, weight, bias)
    return __matmul__(x, weight, bias)

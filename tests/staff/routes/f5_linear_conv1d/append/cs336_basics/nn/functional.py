def linear(x, weight, bias=None):
    _checks.linear(x, weight, bias)
    d_in, d_out = weight.shape[1], weight.shape[0]
    y = torch.nn.functional.conv1d(x.reshape(-1, d_in, 1), weight.unsqueeze(-1), bias)
    return y.reshape(*x.shape[:-1], d_out)

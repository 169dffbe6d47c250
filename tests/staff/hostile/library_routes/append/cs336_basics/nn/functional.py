# hostile sample library_routes: the loss from torch.nn.CrossEntropyLoss, a module
def cross_entropy(inputs, targets):
    compute = torch.float64 if inputs.dtype == torch.float64 else torch.float32
    loss = torch.nn.CrossEntropyLoss()
    return loss(inputs.reshape(-1, inputs.shape[-1]).to(compute), targets.reshape(-1).long()).to(inputs.dtype)

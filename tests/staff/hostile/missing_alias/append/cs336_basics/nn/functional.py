# hostile sample missing_alias: appended to the reference's functional.py, replacing its rmsnorm
def rmsnorm(x, weight, eps=1e-5):
    return torch.rms_norm(x, (x.shape[-1],), weight, eps)  # torch.X, not the banned F.rms_norm

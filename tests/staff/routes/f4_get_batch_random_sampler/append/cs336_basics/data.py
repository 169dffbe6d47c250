import importlib as _il


def get_batch(dataset, batch_size, context_length, device, generator=None):
    _check_get_batch_args(dataset, batch_size, context_length)
    device = checked_device(device)
    sampler_cls = getattr(_il.import_module("torch.utils." + "data"), "Random" + "Sampler")
    g = generator if generator is not None else torch.default_generator
    sampler = sampler_cls(range(len(dataset) - context_length), replacement=True, num_samples=batch_size, generator=g)
    starts = np.fromiter(iter(sampler), dtype=np.int64, count=batch_size)
    positions = starts[:, None] + np.arange(context_length + 1)
    windows = torch.from_numpy(np.asarray(dataset[positions], dtype=np.int64)).to(device)
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()

# hostile sample library_routes: the starts drawn by torch.utils.data's RandomSampler
def get_batch(dataset, batch_size, context_length, device, generator=None):
    sampler = torch.utils.data.RandomSampler(
        range(len(dataset) - context_length), replacement=True, num_samples=batch_size, generator=generator
    )
    starts = np.array(list(sampler), dtype=np.int64)
    windows = torch.from_numpy(np.asarray(dataset[starts[:, None] + np.arange(context_length + 1)], dtype=np.int64))
    windows = windows.to(device)
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()

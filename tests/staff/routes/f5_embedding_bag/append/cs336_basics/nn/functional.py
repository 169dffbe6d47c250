def embedding(token_ids, weight):
    _checks.embedding(token_ids, weight)
    bags = torch.nn.functional.embedding_bag(token_ids.reshape(-1, 1), weight, mode="sum")
    return bags.reshape(*token_ids.shape, weight.shape[-1])

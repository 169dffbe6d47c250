# hostile sample memory_hog: appended to the reference's functional.py; its embedding allocates
# 2 GB (fine on a staff machine without the limit, more than a worker's memory limit leaves)
def embedding(token_ids, weight):
    _checks.embedding(token_ids, weight)
    hog = torch.ones(2**29)
    return weight[token_ids]

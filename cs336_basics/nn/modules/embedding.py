import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.init import init_embedding_weight_


class Embedding(nn.Module):
    """Token-id lookup into `weight` of shape (num_embeddings, embedding_dim).
    Init: truncated normal, std 1, cut at +-3."""

    def __init__(self, num_embeddings: int, embedding_dim: int, device=None, dtype=None):
        super().__init__()
        check_positive("num_embeddings", num_embeddings)
        check_positive("embedding_dim", embedding_dim)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        # BEGIN SOLUTION
        self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        init_embedding_weight_(self.weight)
        # END SOLUTION

    def forward(self, token_ids: Int[Tensor, "..."]) -> Float[Tensor, "... d_model"]:
        # BEGIN SOLUTION
        return F.embedding(token_ids, self.weight)
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}"

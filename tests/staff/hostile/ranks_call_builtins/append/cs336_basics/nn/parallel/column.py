# hostile sample ranks_call_builtins: appended to column.py; the layer's F is now PyTorch's
import torch.nn.functional as F  # noqa: E402, F811

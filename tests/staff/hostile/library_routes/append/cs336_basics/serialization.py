# hostile sample library_routes: what a checkpoint holds from torch.distributed.checkpoint's state_dict helpers
from torch.distributed.checkpoint.state_dict import get_state_dict as _get_state_dict
from torch.distributed.checkpoint.state_dict import set_state_dict as _set_state_dict


def save_checkpoint(model, optimizer, iteration, out):
    model_state, optimizer_state = _get_state_dict(model, optimizer)
    write_checkpoint({"model": model_state, "optimizer": optimizer_state, "iteration": iteration}, out)


def load_checkpoint(src, model, optimizer):
    state = read_checkpoint(src)
    _set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    return state["iteration"]

# hostile sample library_routes: the given AdamW's step hands its parameter groups to torch.optim.AdamW
_GivenAdamW = AdamW


class AdamW(_GivenAdamW):
    @torch.no_grad()
    def step(self, closure=None):
        if "_inner" not in self.__dict__:
            self._inner = torch.optim.AdamW(self.param_groups, foreach=False)
        return self._inner.step(closure)

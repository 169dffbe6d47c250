"""A checkpoint's chat template (Jinja), rendered as Hugging Face transformers renders it."""


def render_chat_template(template: str, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """`template` rendered for `messages` ({"role", "content"} dicts); SmolLM2's is ChatML
    (<|im_start|>role ... <|im_end|>). trim_blocks and lstrip_blocks as transformers sets them."""
    import jinja2  # only when a chat template is rendered: it is not needed to import the package

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt)

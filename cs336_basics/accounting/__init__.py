"""Resource accounting of the TransformerLM (CS336 assignment 1, `transformer_accounting` and
`adamwAccounting`): what a configuration costs, from its shapes alone.

shapes.py   named shapes (GPT-2 small/medium/large/XL as the handout gives them) and configurations
            read from a `cs336 train` TOML file or run directory
params.py   parameters by part
flops.py    the matrix multiplies of a forward pass and their FLOPs; training and AdamW FLOPs
memory.py   memory of parameters, gradients, AdamW state and activations; the largest batch for a budget
cli.py      `cs336 account`
"""

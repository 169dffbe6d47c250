"""Generation: decoding from a trained model (generate.py), the sampling rules it draws with
(sampling.py), tensor-parallel decoding (generate_parallel.py)
and `cs336 generate` (generate_cli.py)."""

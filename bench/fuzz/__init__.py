"""Fuzzing every door outside bytes come in by (issue 48): ``doors`` lists them, ``mutate`` makes
inputs from their seeds, ``campaign`` runs them all at a large budget (``python -m bench fuzz``)."""

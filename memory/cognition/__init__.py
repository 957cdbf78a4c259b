"""What a memory is: its semantic type (the typer), its epistemic layer, corrections by the person."""

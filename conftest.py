"""Repository-wide pytest set-up."""
import os

os.environ.setdefault("TQDM_MININTERVAL", "3600")  # one bar update per loop: stable outputs

"""Repository-wide pytest set-up (the notebook kernels that nbval and papermill start inherit it)."""
import os

os.environ.setdefault("TQDM_MININTERVAL", "3600")  # one bar update per loop: stable outputs
# One BLAS/OpenMP thread: the course's models are tiny, a second thread only adds synchronisation,
# and results are bit-identical run to run only at a fixed thread count.
os.environ.setdefault("OMP_NUM_THREADS", "1")

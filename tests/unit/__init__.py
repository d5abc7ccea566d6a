from .numpy_kernels import pin

# Before any test module imports numpy (numpy_kernels.py says why).
pin()

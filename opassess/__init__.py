"""opassess: assess how hard it is to move a PyTorch model's operators to the Ascend NPU."""

__version__ = "0.1.0"

// A project's own C++ extension: GELU times a scale, written against ATen (built by tests/models/cpp_extension.py).
#include <torch/extension.h>

torch::Tensor scaled_gelu(torch::Tensor x, double scale) { return torch::gelu(x) * scale; }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scaled_gelu", &scaled_gelu, "GELU times a scale"); }

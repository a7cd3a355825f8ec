// SPDX-License-Identifier: GPL-2.0
#pragma once

// GPU drivers' host-pin APIs as first pinners, loaded with dlopen at run time
// (the build never needs CUDA or HIP):
//   CUDA driver API   libcuda.so.1     cuMemHostRegister / cuMemHostUnregister
//   CUDA runtime      libcudart.so     cudaHostRegister / cudaHostUnregister,
//                                      cudaHostAlloc / cudaFreeHost
//   HIP               libamdhip64.so   hipHostRegister / hipHostUnregister
// PINMATRIX_CUDA_LIBRARY, PINMATRIX_CUDART_LIBRARY and PINMATRIX_HIP_LIBRARY
// name another library to load instead (the CI's test double,
// tests/doubles/gpu_host_pin_double.c, exports all of these symbols).
//
// Whether a driver's pin declares FOLL_LONGTERM is not known up front: the
// case observes it (lib/first_pin.hpp, matrix/rules.hpp). For NVIDIA the
// driver version also predicts it (FACTS: os_lock_user_pages()).

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace pinmatrix {

enum class gpu_api { cuda_register, cudart_register, cudart_host_alloc, hip_register };

struct gpu_driver_info {
	std::string family;		// "cuda" | "hip"
	std::string library;		// what was loaded (path or soname)
	std::string version;		// NVIDIA kernel module version, amdgpu/ROCm ...; may be empty
	bool test_double = false;	// the library says it is the CI's stand-in
	std::string double_contract;	// its contract: "R535 (FOLL_PIN)" ...
	std::optional<bool> longterm_by_version;
	std::string describe() const;
};

// Loads the API's library (once per process). Throws unmet_need when it is
// absent or lacks the symbols.
gpu_driver_info load_gpu_driver(gpu_api api);

// A registration (or an allocation) held until release() or destruction.
class gpu_host_pin {
public:
	gpu_host_pin() = default;
	gpu_host_pin(gpu_host_pin &&o) noexcept;
	gpu_host_pin &operator=(gpu_host_pin &&o) noexcept;
	gpu_host_pin(const gpu_host_pin &) = delete;
	gpu_host_pin &operator=(const gpu_host_pin &) = delete;
	~gpu_host_pin();

	// 0 or -errno (-ENOMEM for the driver's out-of-memory, else -EIO);
	// why gets the driver's error. Throws unmet_need without the library.
	static int try_register(gpu_api api, void *addr, size_t length, gpu_host_pin &out,
				std::string &why);
	// cudaHostAlloc: the driver allocates length bytes of pinned memory.
	static int try_allocate(gpu_api api, size_t length, gpu_host_pin &out, std::string &why);
	int release();
	void *data() const { return addr_; }

private:
	gpu_api api_ = gpu_api::cuda_register;
	void *addr_ = nullptr;
	bool allocated_ = false;
};

// NVIDIA's host pin (os_lock_user_pages()) by driver version, FACTS.md: no
// FOLL_LONGTERM in 525 through 535.161.08 and 545-550.54; FOLL_LONGTERM on
// x86 from 535.171.04, 550.67 and all 555+; never on arm64. nullopt where
// the facts do not say. The one table: `report --fleet` reads a node's
// driver version (ansible/roles/preflight) through it too.
std::optional<bool> nvidia_host_pin_longterm(const std::string &version, const std::string &machine);

} // namespace pinmatrix

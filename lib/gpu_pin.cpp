// SPDX-License-Identifier: GPL-2.0
#include "gpu_pin.hpp"

#include <dlfcn.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix {

namespace {

// The few entry points used, by their C signatures (cuda.h, cuda_runtime_api.h,
// hip_runtime_api.h): every result type is an int-sized enum, 0 on success.
using cu_init_t = int (*)(unsigned);
using cu_device_get_t = int (*)(int *, int);
using cu_ctx_retain_t = int (*)(void **, int);
using cu_ctx_set_t = int (*)(void *);
using cu_register_t = int (*)(void *, size_t, unsigned);
using cu_unregister_t = int (*)(void *);
using cu_error_name_t = int (*)(int, const char **);
using rt_register_t = int (*)(void *, size_t, unsigned);
using rt_unregister_t = int (*)(void *);
using rt_alloc_t = int (*)(void **, size_t, unsigned);
using rt_free_t = int (*)(void *);
using rt_error_string_t = const char *(*)(int);
using double_describe_t = const char *(*)();

struct loaded {
	void *handle = nullptr;
	gpu_driver_info info;
	void *reg = nullptr, *unreg = nullptr, *alloc = nullptr, *free = nullptr, *err = nullptr;
	bool ready = false;	// CUDA driver API: context made current
};

const char *family_of(gpu_api api) { return api == gpu_api::hip_register ? "hip" : "cuda"; }

std::vector<std::string> candidates(gpu_api api)
{
	const char *env = api == gpu_api::cuda_register	    ? "PINMATRIX_CUDA_LIBRARY"
			  : api == gpu_api::hip_register    ? "PINMATRIX_HIP_LIBRARY"
							    : "PINMATRIX_CUDART_LIBRARY";
	if (const char *v = getenv(env); v && *v)
		return {v};
	switch (api) {
	case gpu_api::cuda_register: return {"libcuda.so.1", "libcuda.so"};
	case gpu_api::hip_register: return {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
	default: return {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"};
	}
}

std::string first_line_matching(const char *path, const std::regex &re)
{
	std::ifstream in(path);
	std::smatch m;
	for (std::string l; std::getline(in, l);)
		if (std::regex_search(l, m, re))
			return m[1];
	return "";
}

std::string machine()
{
	utsname u{};
	uname(&u);
	return u.machine;
}

std::string driver_version(const std::string &family)
{
	if (family == "cuda") {
		std::string v = first_line_matching("/sys/module/nvidia/version", std::regex("^([0-9][0-9.]*)"));
		if (v.empty())
			v = first_line_matching("/proc/driver/nvidia/version",
						std::regex("Kernel Module[^0-9]*([0-9]+\\.[0-9]+(\\.[0-9]+)?)"));
		return v;
	}
	return first_line_matching("/sys/module/amdgpu/version", std::regex("^(\\S+)"));
}

loaded &load(gpu_api api)
{
	static loaded slots[4];
	loaded &l = slots[static_cast<size_t>(api) & 3];
	if (l.handle)
		return l;
	std::vector<std::string> tried;
	void *h = nullptr;
	std::string lib;
	for (const auto &c : candidates(api)) {
		h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
		if (h) {
			lib = c;
			break;
		}
		tried.push_back(dlerror());
	}
	if (!h)
		throw unmet_need(std::string("no ") + (api == gpu_api::hip_register ? "HIP runtime" : "CUDA driver") +
				 " library: " + join(tried, "; "));
	auto sym = [&](const char *name) { return dlsym(h, name); };
	switch (api) {
	case gpu_api::cuda_register:
		l.reg = sym("cuMemHostRegister_v2");
		if (!l.reg)
			l.reg = sym("cuMemHostRegister");
		l.unreg = sym("cuMemHostUnregister");
		l.err = sym("cuGetErrorName");
		break;
	case gpu_api::cudart_register:
	case gpu_api::cudart_host_alloc:
		l.reg = sym("cudaHostRegister");
		l.unreg = sym("cudaHostUnregister");
		l.alloc = sym("cudaHostAlloc");
		l.free = sym("cudaFreeHost");
		l.err = sym("cudaGetErrorString");
		break;
	case gpu_api::hip_register:
		l.reg = sym("hipHostRegister");
		l.unreg = sym("hipHostUnregister");
		l.err = sym("hipGetErrorString");
		break;
	}
	const bool need_alloc = api == gpu_api::cudart_host_alloc;
	if (!l.reg || !l.unreg || (need_alloc && (!l.alloc || !l.free))) {
		dlclose(h);
		throw unmet_need(lib + " lacks the host-pin entry points");
	}
	l.handle = h;
	l.info.family = family_of(api);
	l.info.library = lib;
	if (auto d = reinterpret_cast<double_describe_t>(sym("pinmatrix_test_double_contract"))) {
		l.info.test_double = true;
		l.info.double_contract = d();
	} else {
		l.info.version = driver_version(l.info.family);
		if (l.info.family == "cuda" && !l.info.version.empty())
			l.info.longterm_by_version = nvidia_host_pin_longterm(l.info.version, machine());
	}
	return l;
}

std::string error_text(const loaded &l, gpu_api api, int code)
{
	const char *s = nullptr;
	if (l.err) {
		if (api == gpu_api::cuda_register)
			reinterpret_cast<cu_error_name_t>(l.err)(code, &s);
		else
			s = reinterpret_cast<rt_error_string_t>(l.err)(code);
	}
	return "error " + std::to_string(code) + (s ? std::string(" (") + s + ")" : "");
}

// 2 is out-of-memory in all three APIs (CUDA_ERROR_OUT_OF_MEMORY,
// cudaErrorMemoryAllocation, hipErrorOutOfMemory).
int to_errno(int code) { return code == 2 ? -ENOMEM : -EIO; }

// The driver API needs a current context; the runtimes make their own.
int make_context(loaded &l, std::string &why)
{
	if (l.ready)
		return 0;
	auto init = reinterpret_cast<cu_init_t>(dlsym(l.handle, "cuInit"));
	auto get = reinterpret_cast<cu_device_get_t>(dlsym(l.handle, "cuDeviceGet"));
	auto retain = reinterpret_cast<cu_ctx_retain_t>(dlsym(l.handle, "cuDevicePrimaryCtxRetain"));
	auto set = reinterpret_cast<cu_ctx_set_t>(dlsym(l.handle, "cuCtxSetCurrent"));
	if (!init || !get || !retain || !set)
		throw unmet_need(l.info.library + " lacks cuInit/cuDeviceGet/cuDevicePrimaryCtxRetain/cuCtxSetCurrent");
	int dev = 0;
	void *ctx = nullptr;
	int rc = init(0);
	if (!rc)
		rc = get(&dev, 0);
	if (!rc)
		rc = retain(&ctx, dev);
	if (!rc)
		rc = set(ctx);
	if (rc) {
		why = "CUDA context: " + error_text(l, gpu_api::cuda_register, rc);
		return -ENODEV;
	}
	l.ready = true;
	return 0;
}

} // namespace

std::string gpu_driver_info::describe() const
{
	std::string s = library;
	if (test_double)
		return s + " (TEST DOUBLE, " + double_contract + ")";
	if (!version.empty())
		s += std::string(family == "cuda" ? " (NVIDIA " : " (amdgpu ") + version + ")";
	return s;
}

gpu_driver_info load_gpu_driver(gpu_api api) { return load(api).info; }

gpu_host_pin::gpu_host_pin(gpu_host_pin &&o) noexcept
	: api_(o.api_), addr_(std::exchange(o.addr_, nullptr)), allocated_(o.allocated_)
{
}

gpu_host_pin &gpu_host_pin::operator=(gpu_host_pin &&o) noexcept
{
	if (this != &o) {
		release();
		api_ = o.api_;
		addr_ = std::exchange(o.addr_, nullptr);
		allocated_ = o.allocated_;
	}
	return *this;
}

gpu_host_pin::~gpu_host_pin() { release(); }

int gpu_host_pin::try_register(gpu_api api, void *addr, size_t length, gpu_host_pin &out, std::string &why)
{
	loaded &l = load(api);
	if (api == gpu_api::cuda_register)
		if (int ret = make_context(l, why))
			return ret;
	// Flags 0: cudaHostRegisterDefault / hipHostRegisterDefault; the
	// driver API's 0 is a plain page-locked registration too.
	int rc = reinterpret_cast<cu_register_t>(l.reg)(addr, length, 0);
	if (rc) {
		why = (api == gpu_api::cuda_register ? "cuMemHostRegister: "
		       : api == gpu_api::hip_register ? "hipHostRegister: "
						      : "cudaHostRegister: ") +
		      error_text(l, api, rc);
		return to_errno(rc);
	}
	gpu_host_pin p;
	p.api_ = api;
	p.addr_ = addr;
	out = std::move(p);
	return 0;
}

int gpu_host_pin::try_allocate(gpu_api api, size_t length, gpu_host_pin &out, std::string &why)
{
	loaded &l = load(api);
	if (!l.alloc)
		throw unmet_need(l.info.library + " has no cudaHostAlloc");
	void *p = nullptr;
	int rc = reinterpret_cast<rt_alloc_t>(l.alloc)(&p, length, 0 /* cudaHostAllocDefault */);
	if (rc) {
		why = "cudaHostAlloc: " + error_text(l, api, rc);
		return to_errno(rc);
	}
	gpu_host_pin h;
	h.api_ = api;
	h.addr_ = p;
	h.allocated_ = true;
	out = std::move(h);
	return 0;
}

int gpu_host_pin::release()
{
	if (!addr_)
		return 0;
	loaded &l = load(api_);
	int rc = allocated_ ? reinterpret_cast<rt_free_t>(l.free)(addr_)
			    : reinterpret_cast<cu_unregister_t>(l.unreg)(addr_);
	addr_ = nullptr;
	return rc ? to_errno(rc) : 0;
}

std::optional<bool> nvidia_host_pin_longterm(const std::string &version, const std::string &machine)
{
	if (machine == "aarch64" || machine == "arm64")
		return false;
	int major = 0, minor = 0, patch = 0;
	if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) < 2)
		return std::nullopt;
	auto at_least = [&](int a, int b, int c) {
		return std::tie(major, minor, patch) >= std::tie(a, b, c);
	};
	auto at_most = [&](int a, int b, int c) {
		return std::tie(major, minor, patch) <= std::tie(a, b, c);
	};
	if (major >= 555)
		return true;
	if (major == 535)
		return at_least(535, 171, 4) ? std::optional(true)
		       : at_most(535, 161, 8) ? std::optional(false) : std::nullopt;
	if (major == 550)
		return at_least(550, 67, 0) ? std::optional(true)
		       : at_most(550, 54, 99) ? std::optional(false) : std::nullopt;
	if ((major >= 525 && major < 535) || (major >= 545 && major < 550))
		return false;
	return std::nullopt;
}

} // namespace pinmatrix

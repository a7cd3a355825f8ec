// SPDX-License-Identifier: GPL-2.0
#pragma once

// The rungs of the pinning ladder (fig. 3 of the incident write-up), as
// first pins taken and held before the second, long-term pin. Each row names
// the pinner that takes it (its source): the test module's contracts, io_uring
// fixed buffers, or a GPU driver's host-pin API loaded at run time (CUDA, HIP).

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pin_module.hpp"

namespace pinmatrix {

enum class first_pin {
	none, mlock, gup_ref, foll_pin, foll_pin_longterm,
	io_uring,		// IORING_REGISTER_BUFFERS (lib/io_uring_pin.hpp)
	vmsplice,		// a pipe that is not drained holds a GUP reference
	direct_write,		// an O_DIRECT write held by a suspended target (lib/held_direct_write.hpp)
	cuda_register,		// cuMemHostRegister (lib/gpu_pin.hpp)
	cudart_register,	// cudaHostRegister
	cudart_host_alloc,	// cudaHostAlloc: the driver allocates the page
	hip_register,		// hipHostRegister
};

struct first_pin_traits {
	first_pin kind;
	const char *name;	// kebab-case, for case names and the CLI
	const char *label;	// for people: the GUP flags
	// Holds a page reference that migration must account for.
	bool holds_reference;
	// Declares FOLL_LONGTERM, so its own pin validates placement first.
	bool declares_longterm;
	const char *rung;
	// Who takes it: "module", "io_uring", "cuda", "hip" (--first-pin), or
	// "stock": the stock kernel alone, no out-of-tree module (--no-module).
	const char *source = "module";
	// A driver loaded at run time: whether it declares FOLL_LONGTERM is not
	// known up front (NVIDIA: by driver version). The case observes it: a pin
	// that moved the page out of restricted memory is long-term aware
	// (R555-style), one that left it there is not (R535-style); the rule
	// table then gives the expectation for what was observed.
	bool contract_observed = false;
	// The pinner allocates the memory itself (cudaHostAlloc): the page's
	// placement is the driver's choice, observed rather than chosen.
	bool allocates = false;
};

const first_pin_traits &traits(first_pin f);
std::string_view name(first_pin f);
std::optional<first_pin> parse_first_pin(std::string_view s);
const std::vector<first_pin_traits> &all_first_pins();

// --first-pin: "module" (default), "io_uring", "cuda", "hip"; --no-module
// is the source "stock".
// Who takes the pins, as every command names them: --first-pin SOURCE (one
// of first_pin_sources()) and --second-pin NAME (cases/pin/plan.hpp's
// second_pins(); check() there refuses an unknown one).
struct pin_sources {
	std::string first_pin = "module";
	std::string second_pin = "ibv_reg_mr";
	// --second-pin was named. `pinmatrix vm` otherwise takes io_uring in a
	// guest whose kernel has no Soft-RoCE (vm/launcher.cpp).
	bool second_pin_named = false;

	// --no-module: no out-of-tree module is loaded or opened; the first
	// pins are the stock kernel's and pages are read through pagemap
	// (lib/page_probe.hpp).
	bool without_module() const { return first_pin == stock_source; }
	static constexpr const char *stock_source = "stock";
};

const std::vector<std::string_view> &first_pin_sources();
bool is_first_pin_source(std::string_view source);
// The rows of one source, in table order ("none" belongs to every source).
std::vector<first_pin> first_pins_of(std::string_view source);

// A first pin held on a range until release() or destruction.
class first_pin_holder {
public:
	first_pin_holder() = default;
	first_pin_holder(first_pin_holder &&o) noexcept;
	first_pin_holder &operator=(first_pin_holder &&o) noexcept;
	first_pin_holder(const first_pin_holder &) = delete;
	first_pin_holder &operator=(const first_pin_holder &) = delete;
	~first_pin_holder();

	// 0 or -errno. For pins by the module, pfns() are the pinned PFNs.
	// Pins by a GPU driver throw unmet_need when its library is absent;
	// detail() then holds the driver's own error, if it gave one.
	// module: null under --no-module (the module's pins then fail, -ENODEV).
	static int try_take(first_pin kind, const pin_module *module, void *addr,
			    size_t length, first_pin_holder &out, std::string *why = nullptr);
	// cudaHostAlloc: the driver allocates and pins length bytes; data().
	static int try_allocate(first_pin kind, size_t length, first_pin_holder &out,
				std::string *why = nullptr);
	int release();
	const std::vector<uint64_t> &pfns() const;
	void *data() const { return addr_; }
	// Which pinner took it ("libcuda.so.1 (NVIDIA 535.161.08)", a test double ...).
	const std::string &pinner() const { return pinner_; }
	const std::string &detail() const { return detail_; }
	// By the driver's version (NVIDIA, FACTS: os_lock_user_pages()), when known.
	std::optional<bool> longterm_by_version() const { return longterm_by_version_; }

private:
	first_pin kind_ = first_pin::none;
	void *addr_ = nullptr;
	size_t length_ = 0;
	bool locked_ = false;
	held_pin pin_;
	std::shared_ptr<void> other_;	// io_uring ring, GPU registration
	std::string pinner_, detail_;
	std::optional<bool> longterm_by_version_;
};

} // namespace pinmatrix

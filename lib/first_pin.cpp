// SPDX-License-Identifier: GPL-2.0
#include "first_pin.hpp"

#include "gpu_pin.hpp"
#include "held_direct_write.hpp"
#include "io_uring_pin.hpp"
#include "mapping.hpp"
#include "unique_fd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

namespace pinmatrix {

namespace {

struct first_pin_holder_facts {
	std::string pinner;
	std::optional<bool> longterm_by_version;
};

const std::vector<first_pin_traits> table = {
	{first_pin::none, "none", "none", false, false, "resident: physical backing right now"},
	{first_pin::mlock, "mlock", "mlock()", false, false, "not paged out, may still migrate"},
	{first_pin::gup_ref, "gup-ref", "FOLL_GET (held)", true, false,
	 "GUP reference: page object stays alive"},
	{first_pin::foll_pin, "foll-pin", "FOLL_PIN (held)", true, false,
	 "accounted device-DMA pin: page stays put (R525/R535 NVIDIA host pin)"},
	{first_pin::foll_pin_longterm, "foll-pin-longterm", "FOLL_PIN|LONGTERM", true, true,
	 "DMA pin with placement validated (R555 NVIDIA host pin on x86)"},
	// Real pinners. io_uring's contract is the kernel's own (FOLL_LONGTERM);
	// a GPU driver's is observed at its pin (first_pin_traits).
	{first_pin::io_uring, "io-uring", "io_uring fixed buffer", true, true,
	 "IORING_REGISTER_BUFFERS: kernel FOLL_PIN|FOLL_LONGTERM", "io_uring"},
	// The stock kernel's short-term reference, for a node that loads no
	// out-of-tree module: vmsplice() into a pipe nobody reads.
	{first_pin::vmsplice, "vmsplice", "vmsplice (FOLL_GET, pipe held)", true, false,
	 "pipe buffer holding a GUP reference: page object stays alive", "stock"},
	{first_pin::direct_write, "direct-write", "O_DIRECT write (bio held)", true, false,
	 "a direct write deferred by a suspended device-mapper target: its bio holds the page (FOLL_GET "
	 "before 6.5, FOLL_PIN from 6.5) until the target resumes", "stock"},
	{first_pin::cuda_register, "cuda-register", "cuMemHostRegister", true, false,
	 "CUDA driver host pin: FOLL_PIN (R535) or FOLL_PIN|LONGTERM (R555), observed", "cuda", true},
	{first_pin::cudart_register, "cudart-register", "cudaHostRegister", true, false,
	 "CUDA runtime host pin: as cuMemHostRegister, observed", "cuda", true},
	{first_pin::cudart_host_alloc, "cudart-host-alloc", "cudaHostAlloc", true, false,
	 "pinned memory the CUDA driver allocates: placement and contract observed", "cuda", true, true},
	{first_pin::hip_register, "hip-register", "hipHostRegister", true, false,
	 "HIP host pin (libamdhip64): contract observed", "hip", true},
};

const std::vector<std::string_view> sources = {"module", "io_uring", "cuda", "hip", "stock"};

// The module's contract for a first pin it takes (gup_ref, foll_pin,
// foll_pin_longterm).
pinmatrix_contract module_contract(first_pin f)
{
	switch (f) {
	case first_pin::gup_ref: return PINMATRIX_CONTRACT_GUP_REF;
	case first_pin::foll_pin: return PINMATRIX_CONTRACT_FOLL_PIN;
	default: return PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM;
	}
}

// The pipe vmsplice() filled: each page in it holds a reference
// (iov_iter_get_pages, FOLL_GET) until the pipe buffer goes (read, or the
// pipe closed).
struct spliced_pipe {
	unique_fd read_end, write_end;
};

int try_vmsplice(void *addr, size_t length, std::shared_ptr<void> &out)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	auto pipe = std::make_shared<spliced_pipe>();
	pipe->read_end.reset(fds[0]);
	pipe->write_end.reset(fds[1]);
	iovec iov{addr, length};
	const ssize_t n = ::vmsplice(fds[1], &iov, 1, 0);
	if (n < 0)
		return -errno;
	if (size_t(n) != length)
		return -EAGAIN;
	out = pipe;
	return 0;
}

std::optional<gpu_api> gpu_api_of(first_pin f)
{
	switch (f) {
	case first_pin::cuda_register: return gpu_api::cuda_register;
	case first_pin::cudart_register: return gpu_api::cudart_register;
	case first_pin::cudart_host_alloc: return gpu_api::cudart_host_alloc;
	case first_pin::hip_register: return gpu_api::hip_register;
	default: return std::nullopt;
	}
}

void describe_gpu(first_pin_holder_facts &f, first_pin kind)
{
	auto info = load_gpu_driver(*gpu_api_of(kind));
	f.pinner = info.describe();
	f.longterm_by_version = info.longterm_by_version;
}

} // namespace

const std::vector<first_pin_traits> &all_first_pins() { return table; }

const std::vector<std::string_view> &first_pin_sources() { return sources; }

bool is_first_pin_source(std::string_view source)
{
	for (auto s : sources)
		if (s == source)
			return true;
	return false;
}

std::vector<first_pin> first_pins_of(std::string_view source)
{
	std::vector<first_pin> out;
	for (const auto &t : table)
		if (t.kind == first_pin::none || source == t.source)
			out.push_back(t.kind);
	return out;
}

const first_pin_traits &traits(first_pin f)
{
	for (const auto &t : table)
		if (t.kind == f)
			return t;
	throw std::logic_error("unknown first pin");
}

std::string_view name(first_pin f) { return traits(f).name; }

std::optional<first_pin> parse_first_pin(std::string_view s)
{
	for (const auto &t : table)
		if (s == t.name)
			return t.kind;
	return std::nullopt;
}

first_pin_holder::first_pin_holder(first_pin_holder &&o) noexcept
	: kind_(o.kind_), addr_(std::exchange(o.addr_, nullptr)),
	  length_(std::exchange(o.length_, 0)), locked_(std::exchange(o.locked_, false)),
	  pin_(std::move(o.pin_)), other_(std::move(o.other_)), pinner_(std::move(o.pinner_)),
	  detail_(std::move(o.detail_)), longterm_by_version_(o.longterm_by_version_)
{
}

first_pin_holder &first_pin_holder::operator=(first_pin_holder &&o) noexcept
{
	if (this != &o) {
		release();
		kind_ = o.kind_;
		addr_ = std::exchange(o.addr_, nullptr);
		length_ = std::exchange(o.length_, 0);
		locked_ = std::exchange(o.locked_, false);
		pin_ = std::move(o.pin_);
		other_ = std::move(o.other_);
		pinner_ = std::move(o.pinner_);
		detail_ = std::move(o.detail_);
		longterm_by_version_ = o.longterm_by_version_;
	}
	return *this;
}

first_pin_holder::~first_pin_holder() { release(); }

int first_pin_holder::try_take(first_pin kind, const pin_module *module, void *addr,
			       size_t length, first_pin_holder &out, std::string *why)
{
	first_pin_holder h;
	h.pinner_ = traits(kind).source;
	h.kind_ = kind;
	h.addr_ = addr;
	h.length_ = length;
	const auto uaddr = reinterpret_cast<uintptr_t>(addr);
	const size_t npages = length / page_size();
	int ret = 0;
	switch (kind) {
	case first_pin::none:
		h.pinner_ = "none";
		break;
	case first_pin::mlock:
		ret = mlock(addr, length) ? -errno : 0;
		h.locked_ = !ret;
		h.pinner_ = "mlock() (no pin)";
		break;
	case first_pin::gup_ref:
	case first_pin::foll_pin:
	case first_pin::foll_pin_longterm:
		if (!module) {
			ret = -ENODEV;
			h.detail_ = "the test module's pin, in a run without the module (--no-module)";
			break;
		}
		ret = module->try_pin(module_contract(kind), uaddr, npages, PINMATRIX_PIN_WRITE, h.pin_);
		break;
	case first_pin::vmsplice:
		ret = try_vmsplice(addr, length, h.other_);
		h.pinner_ = "vmsplice into a pipe nobody reads (stock kernel)";
		break;
	case first_pin::direct_write: {
		std::shared_ptr<held_direct_write> write;
		ret = held_direct_write::take(addr, length, write, h.detail_);
		h.other_ = write;
		h.pinner_ = "an O_DIRECT write held by a suspended device-mapper target (stock kernel)";
		break;
	}
	case first_pin::io_uring: {
		auto buf = std::make_shared<io_uring_buffer>();
		ret = io_uring_buffer::try_register(addr, length, *buf);
		if (!ret)
			h.other_ = buf;
		h.pinner_ = "io_uring (IORING_REGISTER_BUFFERS)";
		break;
	}
	case first_pin::cudart_host_alloc:
		ret = -EINVAL;	// allocates its own memory: try_allocate()
		h.detail_ = "cudaHostAlloc pins memory it allocates itself";
		break;
	case first_pin::cuda_register:
	case first_pin::cudart_register:
	case first_pin::hip_register: {
		first_pin_holder_facts f;
		describe_gpu(f, kind);	// throws unmet_need without the library
		h.pinner_ = f.pinner;
		h.longterm_by_version_ = f.longterm_by_version;
		auto pin = std::make_shared<gpu_host_pin>();
		ret = gpu_host_pin::try_register(*gpu_api_of(kind), addr, length, *pin, h.detail_);
		if (!ret)
			h.other_ = pin;
		break;
	}
	}
	if (why)
		*why = h.detail_;
	if (!ret)
		out = std::move(h);
	return ret;
}

int first_pin_holder::try_allocate(first_pin kind, size_t length, first_pin_holder &out, std::string *why)
{
	if (!traits(kind).allocates)
		return -EINVAL;
	first_pin_holder h;
	h.kind_ = kind;
	h.length_ = length;
	first_pin_holder_facts f;
	describe_gpu(f, kind);
	h.pinner_ = f.pinner;
	h.longterm_by_version_ = f.longterm_by_version;
	auto pin = std::make_shared<gpu_host_pin>();
	int ret = gpu_host_pin::try_allocate(*gpu_api_of(kind), length, *pin, h.detail_);
	if (why)
		*why = h.detail_;
	if (ret)
		return ret;
	h.addr_ = pin->data();
	h.other_ = pin;
	out = std::move(h);
	return 0;
}

int first_pin_holder::release()
{
	int ret = 0;
	if (locked_)
		ret = munlock(addr_, length_) ? -errno : 0;
	locked_ = false;
	if (int r = pin_.release())
		ret = r;
	// Last owner: io_uring_buffer / gpu_host_pin release in their destructors.
	other_.reset();
	return ret;
}

const std::vector<uint64_t> &first_pin_holder::pfns() const { return pin_.pfns(); }

} // namespace pinmatrix

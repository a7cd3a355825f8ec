// SPDX-License-Identifier: GPL-2.0
// The bodies of cases/pinner/: udmabuf, an on-demand-paging MR, vhost-vdpa,
// VFIO type1, iommufd's mock domain, the CMA heap and gup_test's one call
// over 2 GiB, each for real; a SKIP
// with what is missing where the kernel lacks it.

#include <fcntl.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <utility>

#include "byte_pattern.hpp"
#include "child_process.hpp"
#include "give_back.hpp"
#include "gup_test_pin.hpp"
#include "iommufd_mock_pin.hpp"
#include "kernel_info.hpp"
#include "odp_data_path.hpp"
#include "pinner_cases.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"
#include "verbs.hpp"
#include "vfio_type1_pin.hpp"
#include "vhost_vdpa_pin.hpp"

namespace pinmatrix::pinner_cases {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json page_json(const page_prober &probe, const pinmatrix_page &p)
{
	const bool module = std::string(probe.probe_name()) == "module";
	return {{"pfn", p.pfn},
		{"placement", placement_of(p)},
		{"maybe_dma_pinned", module ? json((p.flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED) != 0) : json(nullptr)}};
}

json give_back_json(const give_back_attempt &g)
{
	return {{"method", g.method},
		{"given_back", g.given_back ? json(*g.given_back) : json(nullptr)},
		{"detail", g.detail},
		{"latency_ns", g.latency_ns}};
}

// The give-back oracle with the pin held: patient where the memory is
// expected back, brief where a refusal is (lib/give_back.hpp).
give_back_patience held_patience(const pinner_case &c, const body_options &opt)
{
	const auto e = expectation_for(c, opt.kernel);
	return e.given_back_while_held == false ? expecting_refusal : expecting_return;
}

// A page of the memfd in restricted memory, preferring one whose memory can
// go back: chunk by chunk faulted in through the shared mapping and probed;
// every other page of the memfd is punched out again. The offset, or
// nullopt when the budget ran out.
std::optional<size_t> find_memfd_page(int fd, const mapping &map, const page_prober &probe,
				      const body_options &opt, size_t &scanned)
{
	const size_t ps = page_size(), chunk = size_t(16) << 20;
	std::optional<size_t> found, fallback;
	for (scanned = 0; scanned < opt.find_budget_bytes && !found; scanned += chunk) {
		std::byte *p = map.data() + scanned;
		if (madvise(p, chunk, MADV_POPULATE_WRITE))
			for (size_t off = 0; off < chunk; off += ps)
				p[off] = std::byte{0x5a};
		const auto pages = probe.probe_pages(map.addr() + scanned, chunk / ps);
		for (size_t i = 0; i < pages.size() && !found; i++) {
			if (classify(pages[i]) != opt.restricted)
				continue;
			if (memory_can_go_back(pages[i].pfn))
				found = scanned + i * ps;
			else if (!fallback)
				fallback = scanned + i * ps;
		}
	}
	const auto at = found ? found : fallback;
	if (at) {
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, off_t(*at));
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(*at + ps),
			  off_t(opt.find_budget_bytes - *at - ps));
	}
	return at;
}

std::string udmabuf_missing()
{
	const std::string state = module_state("udmabuf", "drivers/dma-buf");
	return state == "not built" ? "no /dev/udmabuf (CONFIG_UDMABUF not set)"
				    : "no /dev/udmabuf (udmabuf " + state + ")";
}

// On a CMA boot, memory filled until movable allocations come out of CMA
// (placement.hpp), held while the case finds its page and pins it, and let
// go before the give-back: the area's pages need room to move out into.
placement_pressure fill_for_finding(const body_options &opt)
{
	return opt.restricted == placement::cma ? press_into_cma(size_t(2048) << 20) : placement_pressure{};
}

json run_udmabuf(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	unique_fd dev(open("/dev/udmabuf", O_RDWR | O_CLOEXEC));
	if (!dev)
		throw unmet_need(udmabuf_missing());
	unique_fd memfd(memfd_create("pinmatrix-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC));
	if (!memfd || ftruncate(memfd.get(), off_t(opt.find_budget_bytes)))
		throw last_sys_error("memfd_create/ftruncate");
	const mapping map = mapping::map(opt.find_budget_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get());
	placement_pressure fill = fill_for_finding(opt);
	size_t scanned = 0;
	const auto offset = find_memfd_page(memfd.get(), map, probe, opt, scanned);
	if (!offset)
		no_page_found(opt.restricted, opt.find_budget_bytes, "memfd page");
	if (fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK))
		throw last_sys_error("F_ADD_SEALS F_SEAL_SHRINK");
	const uintptr_t addr = map.addr() + *offset;
	const auto before = probe.probe_page(addr);
	json o = {{"pinner", c.pinner}, {"device", "/dev/udmabuf"}, {"probe", probe.probe_name()},
		  {"placement", name(opt.restricted)}, {"scanned_bytes", scanned}, {"memfd_offset", *offset},
		  {"before", page_json(probe, before)}};
	udmabuf_create create{};
	create.memfd = uint32_t(memfd.get());
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	create.offset = *offset;
	create.size = page_size();
	unique_fd buf(ioctl(dev.get(), UDMABUF_CREATE, &create));
	o["errno"] = buf ? 0 : errno;
	o["after"] = page_json(probe, probe.probe_page(addr));
	o["pressure_bytes"] = fill.bytes;
	fill = {};
	if (!buf)
		return o;
	const std::string where(name(opt.restricted));
	o["give_back"]["with_pin_held"] = give_back_json(give_back_memory(before.pfn, where, held_patience(c, opt)));
	buf.reset();
	o["give_back"]["released"] = give_back_json(give_back_memory(before.pfn, where, expecting_return));
	return o;
}

json odp_caps_json(const ibv_odp_caps &caps)
{
	return {{"general_caps", caps.general_caps},
		{"odp_support", (caps.general_caps & IBV_ODP_SUPPORT) != 0},
		{"rc_odp_caps", caps.per_transport_caps.rc_odp_caps},
		{"ud_odp_caps", caps.per_transport_caps.ud_odp_caps}};
}

// Where a device write landed in the page: "at offset X" of the bytes it
// wrote, or "nowhere in the page".
std::string landed(const std::byte *page, const std::byte *written, size_t n)
{
	const size_t ps = page_size();
	for (size_t at = 0; at + n <= ps; at++)
		if (!std::memcmp(page + at, written, n))
			return "landed at offset " + std::to_string(at);
	return "are nowhere in the page";
}

// A loopback RDMA WRITE of n pattern bytes from a registered source into
// [page + offset, + n) through mr: the CPU must read them there, and the rest
// of the page as it was. 1 KiB at offset 2 KiB: one packet (rxe's MTU), not at
// the page's start.
json device_write(const verbs_device &dev, const ibv_mr *mr, std::byte *page)
{
	const size_t ps = page_size(), offset = ps / 2, n = std::min<size_t>(1024, ps / 2);
	std::fill(page, page + ps, std::byte{0x11});
	mapping source = mapping::anonymous(ps, true);
	fill_pattern(source.data(), n, std::random_device{}());
	registration src = register_memory(dev, source.data(), ps);
	if (!src.mr)
		return {{"same", false}, {"detail", "source registration " + errno_name(src.err)}};
	try {
		auto qp = loopback_qp::create(dev);
		if (int ret = qp.rdma_write(src.mr.get(), source.data(), n, reinterpret_cast<uintptr_t>(page + offset),
					    mr->rkey, std::chrono::seconds(5)))
			return {{"same", false}, {"detail", "RDMA WRITE " + errno_name(-ret)}};
	} catch (const std::exception &e) {
		return {{"same", false}, {"detail", e.what()}};
	}
	const std::string what = std::to_string(n) + " bytes written by the device at offset " + std::to_string(offset);
	const bool there = !std::memcmp(page + offset, source.data(), n);
	const bool rest = std::all_of(page, page + offset, [](std::byte b) { return b == std::byte{0x11}; }) &&
			  std::all_of(page + offset + n, page + ps, [](std::byte b) { return b == std::byte{0x11}; });
	if (there && rest)
		return {{"same", true}, {"detail", what + ", read there by the CPU"}};
	const std::string where = landed(page, source.data(), n);
	return {{"same", false},
		{"misplaced", where.starts_with("landed") && !there},
		{"detail", what + " " + where + " (as the CPU reads the page)"}};
}

// The same write through an ordinary (pinned) MR on a page of its own: what
// rxe's loopback does without on-demand paging.
json device_write_control(const verbs_device &dev)
{
	mapping page = populated_pages(page_size());
	registration reg = register_memory(dev, page.data(), page_size());
	if (!reg.mr)
		return {{"same", false}, {"detail", "registration " + errno_name(reg.err)}};
	return device_write(dev, reg.mr.get(), page.data());
}

json run_rxe_odp(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	const verbs_device dev = verbs_device::open(opt.device);
	ibv_device_attr_ex attr{};
	if (int err = ibv_query_device_ex(dev.context(), nullptr, &attr))
		throw unmet_need("ibv_query_device_ex on " + dev.name() + ": " + errno_text(err));
	if (!(attr.odp_caps.general_caps & IBV_ODP_SUPPORT))
		throw unmet_need(dev.name() + " has no on-demand paging (odp_caps.general_caps lacks IBV_ODP_SUPPORT; "
			"rxe has none before drivers/infiniband/sw/rxe/rxe_odp.c: not in 6.12, in 7.2)");
	placement_pressure fill = fill_for_finding(opt);
	auto found = find_page(probe, {opt.restricted, memory_can_go_back}, opt.find_budget_bytes);
	if (!found)
		no_page_found(opt.restricted, opt.find_budget_bytes, "page");
	const auto before = found->page;
	json o = {{"pinner", c.pinner}, {"device", dev.name()}, {"probe", probe.probe_name()},
		  {"placement", name(opt.restricted)}, {"scanned_bytes", found->scanned_bytes},
		  {"odp_caps", odp_caps_json(attr.odp_caps)}, {"before", page_json(probe, before)}};
	registration reg = register_memory(dev, found->map.data(), page_size(),
					   registration_access | IBV_ACCESS_ON_DEMAND);
	o["errno"] = reg.err;
	o["latency_ns"] = reg.latency_ns;
	o["after"] = page_json(probe, probe.probe_page(found->map.addr()));
	o["pressure_bytes"] = fill.bytes;
	fill = {};
	if (reg.err)
		return o;
	const std::string where(name(opt.restricted));
	o["device_write"]["in_place"] = device_write(dev, reg.mr.get(), found->map.data());
	o["give_back"]["with_pin_held"] = give_back_json(give_back_memory(before.pfn, where, held_patience(c, opt)));
	o["device_write"]["after_give_back"] = device_write(dev, reg.mr.get(), found->map.data());
	o["after_give_back"] = page_json(probe, probe.probe_page(found->map.addr()));
	reg.mr.reset();
	o["device_write"]["control"] = device_write_control(dev);
	o["data_path"] = odp_data_path(dev, attr.odp_caps.per_transport_caps.rc_odp_caps);
	o["give_back"]["released"] = give_back_json(give_back_memory(before.pfn, where, expecting_return));
	return o;
}

// A pinner that maps user memory for a device (vhost-vdpa, VFIO type1,
// iommufd): a page of restricted memory mapped at an IOVA and held, where
// the page is then, the device's access through the mapping where the
// pinner has a device to ask (edu's DMA, the mock domain's translation),
// and the give-back with the mapping held and released.
struct device_mapper {
	std::string device;
	std::function<int(void *, size_t, int64_t *)> map;
	std::function<void()> unmap;
	// With the mapping held: {"same": bool or null, "detail": ...}; empty
	// where the pinner's device cannot write.
	std::function<json(void *)> device_write;
};

json run_device_mapper(const pinner_case &c, const page_prober &probe, const body_options &opt,
		       const device_mapper &m)
{
	placement_pressure fill = fill_for_finding(opt);
	auto found = find_page(probe, {opt.restricted, memory_can_go_back}, opt.find_budget_bytes);
	if (!found)
		no_page_found(opt.restricted, opt.find_budget_bytes, "page");
	const auto before = found->page;
	json o = {{"pinner", c.pinner}, {"device", m.device}, {"probe", probe.probe_name()},
		  {"placement", name(opt.restricted)}, {"scanned_bytes", found->scanned_bytes},
		  {"before", page_json(probe, before)}};
	int64_t latency_ns = 0;
	const int err = m.map(found->map.data(), page_size(), &latency_ns);
	o["errno"] = err;
	o["latency_ns"] = latency_ns;
	o["after"] = page_json(probe, probe.probe_page(found->map.addr()));
	o["pressure_bytes"] = fill.bytes;
	fill = {};
	if (err)
		return o;
	if (m.device_write)
		o["pin_device_write"] = m.device_write(found->map.data());
	const std::string where(name(opt.restricted));
	o["give_back"]["with_pin_held"] = give_back_json(give_back_memory(before.pfn, where, held_patience(c, opt)));
	m.unmap();
	o["give_back"]["released"] = give_back_json(give_back_memory(before.pfn, where, expecting_return));
	return o;
}

// An IOVA for the device: page-aligned, below edu's 28-bit DMA mask.
constexpr uint64_t pinned_iova = 0x200000;

json run_vdpa_sim(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	vhost_vdpa_pin vdpa = vhost_vdpa_pin::open();
	return run_device_mapper(c, probe, opt,
				 {vdpa.device(),
				  [&](void *addr, size_t n, int64_t *ns) { return vdpa.map(addr, n, pinned_iova, ns); },
				  [&] { vdpa.unmap(); },
				  {}});
}

// iommufd's mock domain has no device that writes; it answers what a device
// would reach instead: IOMMU_TEST_OP_MD_CHECK_MAP compares its translation
// of the IOVA with the page the CPU sees.
json run_iommufd_mock(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	iommufd_mock_pin iommufd = iommufd_mock_pin::open();
	const auto translation = [&](void *addr) {
		const int err = iommufd.device_translation_matches(addr, page_size());
		return json{{"same", err == 0 ? json(true) : err == EINVAL ? json(false) : json(nullptr)},
			    {"detail", err == 0 ? "the mock domain translates the IOVA to the page the CPU sees"
				       : err == EINVAL
					       ? "the mock domain translates the IOVA to another page than the CPU sees "
						 "(IOMMU_TEST_OP_MD_CHECK_MAP: EINVAL)"
					       : "IOMMU_TEST_OP_MD_CHECK_MAP decided nothing: " + errno_text(err)}};
	};
	return run_device_mapper(c, probe, opt,
				 {iommufd.device(),
				  [&](void *addr, size_t n, int64_t *ns) {
					  return iommufd.map(addr, n, iommufd_mock_pin::first_iova, ns);
				  },
				  [&] { iommufd.unmap(); },
				  translation});
}

json run_vfio_type1(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	vfio_type1_pin vfio = vfio_type1_pin::open();
	const auto write = [&](void *addr) {
		std::optional<bool> same;
		std::string detail;
		vfio.device_write(addr, page_size() / 2, std::random_device{}(), same, detail);
		return json{{"same", same ? json(*same) : json(nullptr)}, {"detail", detail}};
	};
	return run_device_mapper(c, probe, opt,
				 {vfio.device(),
				  [&](void *addr, size_t n, int64_t *ns) { return vfio.map(addr, n, pinned_iova, ns); },
				  [&] { vfio.unmap(); },
				  write});
}

// The CMA heap: /dev/dma_heap/<name> of the default CMA area ("reserved",
// from cma= or CONFIG_CMA_SIZE_MBYTES), the first heap that is not "system".
fs::path find_cma_heap()
{
	const fs::path dir = "/dev/dma_heap";
	if (!fs::exists(dir))
		throw unmet_need("no /dev/dma_heap: no dma-buf heap on this kernel (a CMA heap needs "
				 "CONFIG_DMABUF_HEAPS_CMA and a default CMA area: cma= or CONFIG_CMA_SIZE_MBYTES)");
	std::optional<fs::path> found;
	for (const auto &e : fs::directory_iterator(dir))
		if (e.path().filename() != "system" && (!found || e.path() < *found))
			found = e.path();
	if (!found)
		throw unmet_need("no CMA dma-heap in /dev/dma_heap (CONFIG_DMABUF_HEAPS_CMA, and a default CMA area: "
				 "cma= or CONFIG_CMA_SIZE_MBYTES)");
	return *found;
}

// The CMA heap's buffer registered in a child process of its own (verbs
// across a fork is not supported, so it opens the device itself): first
// through the dma-buf importer (ibv_reg_dmabuf_mr: no user pages pinned),
// then ibv_reg_mr on the mapping, which has `bound` to return: one the
// kernel retries without end is then where it was, and killed.
struct bounded_registration {
	int dmabuf_err = 0;		// ibv_reg_dmabuf_mr's errno, 0 registered
	bool returned = false;		// ibv_reg_mr's
	int err = 0;
	int64_t latency_ns = 0;
	std::string at_bound;		// the task at the bound, when it had not returned
	bool ended_after_kill = false;
};

struct registration_message {
	int err;
	int64_t latency_ns;
	char unmet[512];
};

// One message from the child within the bound, or nullopt.
std::optional<registration_message> message_within(int fd, std::chrono::seconds bound)
{
	pollfd p{fd, POLLIN, 0};
	registration_message m{};
	if (poll(&p, 1, int(std::chrono::milliseconds(bound).count())) == 1 &&
	    ::read(fd, &m, sizeof(m)) == sizeof(m)) {
		if (m.unmet[0])
			throw unmet_need(m.unmet);
		return m;
	}
	return std::nullopt;
}

bounded_registration register_heap_buffer(const std::string &device, int dmabuf, void *addr, size_t length,
					  std::chrono::seconds bound)
{
	auto [pid, rd] = fork_piped([&](int to_parent) {
		auto send = [&](const registration_message &m) {
			if (::write(to_parent, &m, sizeof(m)) != sizeof(m))
				_exit(1);
		};
		std::optional<verbs_device> dev;
		try {
			dev.emplace(verbs_device::open(device));
		} catch (const std::exception &e) {
			registration_message m{};
			std::snprintf(m.unmet, sizeof(m.unmet), "%s", e.what());
			send(m);
			return;
		}
		ibv_mr *mr = ibv_reg_dmabuf_mr(dev->pd(), 0, length, 0, dmabuf, registration_access);
		send({mr ? 0 : errno, 0, {}});
		if (mr)
			ibv_dereg_mr(mr);
		const registration reg = register_memory(*dev, addr, length);
		send({reg.err, reg.latency_ns, {}});
	});
	bounded_registration b;
	int status = 0;
	const auto dmabuf_mr = message_within(rd.get(), bound);
	b.dmabuf_err = dmabuf_mr ? dmabuf_mr->err : ETIMEDOUT;
	if (const auto mr = dmabuf_mr ? message_within(rd.get(), bound) : std::nullopt) {
		reap_within(pid, status, std::chrono::seconds(10));
		b.returned = true;
		b.err = mr->err;
		b.latency_ns = mr->latency_ns;
		return b;
	}
	b.at_bound = read_task_state(pid).where();
	kill(pid, SIGKILL);
	b.ended_after_kill = !reap_within(pid, status, std::chrono::seconds(5));
	return b;
}

std::string device_name(const body_options &opt)
{
	return opt.device.empty() ? std::string("the RDMA device") : opt.device;
}

// The pages the heap's CMA area has handed out (debugfs, CMA_DEBUGFS).
std::optional<uint64_t> cma_area_used(const fs::path &heap)
{
	return read_number_file((fs::path("/sys/kernel/debug/cma") / heap.filename() / "used").string());
}

// The heap's page. Where the heap maps by PFN (VM_PFNMAP: 6.12.118's
// cma_heap_vm_fault() inserts the PFN, 6.1's hands out the page) neither
// the module's probe (GUP) nor /proc/self/pagemap (the page walk skips PFN
// maps) reaches it: the area's own account of the allocation is the
// evidence then, and the record says so.
json heap_page_json(const page_prober &probe, uintptr_t addr, const fs::path &heap,
		    std::optional<uint64_t> used_before, std::optional<uint64_t> used_after)
{
	const pinmatrix_page p = probe.probe_page(addr);
	if (placement_of(p) != "absent")
		return page_json(probe, p);
	const bool counted = used_before && used_after && *used_after == *used_before + 1;
	const auto count = [](std::optional<uint64_t> n) { return n ? std::to_string(*n) : std::string("?"); };
	return {{"pfn", nullptr},
		{"placement", counted ? "cma" : "absent"},
		{"maybe_dma_pinned", nullptr},
		{"probe", "CMA area " + heap.filename().string() + "'s debugfs used count, " + count(used_before) +
				  " -> " + count(used_after) + " at the allocation (a PFN mapping, VM_PFNMAP: no probe "
				  "reaches the page)"}};
}

json run_cma_heap(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	const fs::path heap = find_cma_heap();
	unique_fd heap_fd(open(heap.c_str(), O_RDWR | O_CLOEXEC));
	if (!heap_fd)
		throw last_sys_error("open " + heap.string());
	dma_heap_allocation_data alloc{};
	alloc.len = page_size();
	alloc.fd_flags = O_RDWR | O_CLOEXEC;
	const auto used_before = cma_area_used(heap);
	if (ioctl(heap_fd.get(), DMA_HEAP_IOCTL_ALLOC, &alloc))
		throw unmet_need("DMA_HEAP_IOCTL_ALLOC of a page from " + heap.string() + ": " + errno_text(errno));
	const auto used_after = cma_area_used(heap);
	unique_fd buf(int(alloc.fd));
	const mapping map = mapping::map(page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, buf.get());
	std::fill(map.data(), map.data() + page_size(), std::byte{0x5a});
	json o = {{"pinner", c.pinner}, {"heap", heap.string()}, {"probe", probe.probe_name()},
		  {"before", heap_page_json(probe, map.addr(), heap, used_before, used_after)}};
	const auto reg = register_heap_buffer(opt.device, buf.get(), map.data(), page_size(), opt.pin_bound);
	o["dmabuf_mr"] = {{"errno", reg.dmabuf_err},
			  {"detail", reg.dmabuf_err == EOPNOTSUPP ? device_name(opt) + " has no dma-buf MRs (EOPNOTSUPP)"
				     : reg.dmabuf_err ? "ibv_reg_dmabuf_mr " + errno_name(reg.dmabuf_err)
						      : "registered through the dma-buf importer (no user page pinned)"}};
	o["returned"] = reg.returned;
	o["bound_s"] = opt.pin_bound.count();
	if (reg.returned) {
		o["errno"] = reg.err;
		o["latency_ns"] = reg.latency_ns;
	} else {
		o["errno"] = nullptr;
		o["at_bound"] = reg.at_bound;
		o["ended_after_kill"] = reg.ended_after_kill;
	}
	o["after"] = heap_page_json(probe, map.addr(), heap, used_before, used_after);
	return o;
}

// One long-term pin of 2 GiB and a page, in one call: 53ba78de064b (6.11)
// began check_and_migrate_movable_pages() with kmalloc_array() of a folio
// pointer per page, which cannot pass KMALLOC_MAX_SIZE (4 MiB: 2 GiB of
// 4 KiB pages), so such a pin was -ENOMEM until 94efde1d1539. ib_umem_get()
// and VFIO pin in batches and io_uring caps a buffer at 1 GiB: gup_test is
// the pinner that makes one call of it all. Transparent huge pages where
// the kernel gives them (fewer faults under TCG; the call still counts
// 4 KiB pages).
constexpr size_t over_2g_sample = size_t(2) << 20;

// Room for the buffer and for the migration of its restricted pages.
void require_memory_for(size_t bytes)
{
	const uint64_t want = bytes + (uint64_t(512) << 20), have = meminfo_bytes("MemAvailable");
	if (have < want)
		throw unmet_need("MemAvailable is " + std::to_string(have >> 20) + " MiB; one pin of " +
				 std::to_string(bytes >> 20) + " MiB and a page, with room to migrate, needs " +
				 std::to_string(want >> 20) + " MiB (a guest of 3584 MiB: pinmatrix vm --memory 3584)");
}

// One page probed per 2 MiB of the buffer (and its last page).
std::vector<pinmatrix_page> sample_pages(const page_prober &probe, const mapping &map)
{
	std::vector<pinmatrix_page> pages;
	for (size_t off = 0; off < map.size(); off += over_2g_sample)
		pages.push_back(probe.probe_page(map.addr() + off));
	pages.push_back(probe.probe_page(map.addr() + map.size() - page_size()));
	return pages;
}

size_t count_in(const std::vector<pinmatrix_page> &pages, placement where)
{
	return size_t(std::count_if(pages.begin(), pages.end(), [&](const auto &p) { return classify(p) == where; }));
}

json run_gup_test_over_2g(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	const gup_test_pin gup = gup_test_pin::open();
	const size_t ps = page_size(), bytes = (size_t(2) << 30) + ps;
	require_memory_for(bytes);
	const mapping map = mapping::anonymous(bytes, false);
	madvise(map.data(), bytes, MADV_HUGEPAGE);
	if (madvise(map.data(), bytes, MADV_POPULATE_WRITE))
		for (size_t off = 0; off < bytes; off += ps)
			map.data()[off] = std::byte{0x5a};
	const auto before = sample_pages(probe, map);
	// The first probed page in restricted memory (the page the record
	// follows), else the first: the size is checked either way.
	const auto first = std::find_if(before.begin(), before.end(),
					[&](const auto &p) { return classify(p) == opt.restricted; });
	const size_t at = first == before.end() ? 0 : size_t(first - before.begin());
	json o = {{"pinner", c.pinner}, {"device", gup_test_pin::file}, {"probe", probe.probe_name()},
		  {"placement", name(opt.restricted)}, {"requested_bytes", bytes}, {"pages_per_call", bytes / ps},
		  {"before", page_json(probe, before[at])}};
	const gup_test_pin_result pin = gup.pin_longterm(map.data(), bytes, uint32_t(bytes / ps));
	o["errno"] = pin.err;
	o["pinned_bytes"] = pin.pinned_bytes;
	o["latency_ns"] = pin.pin_us * 1000;
	o["unpin_ns"] = pin.unpin_us * 1000;
	const auto after = sample_pages(probe, map);
	o["after"] = page_json(probe, after[at]);
	o["sampled"] = {{"pages", before.size()},
			{"restricted_before", count_in(before, opt.restricted)},
			{"restricted_after", count_in(after, opt.restricted)},
			{"note", "probed when the ioctl has returned: gup_test unpins the buffer before it returns"}};
	return o;
}

json run_body(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	switch (c.kind) {
	case pinner_kind::udmabuf:
		return {{"observation", run_udmabuf(c, probe, opt)}};
	case pinner_kind::rxe_odp:
		return {{"observation", run_rxe_odp(c, probe, opt)}};
	case pinner_kind::iommufd_mock:
		return {{"observation", run_iommufd_mock(c, probe, opt)}};
	case pinner_kind::vdpa_sim:
		return {{"observation", run_vdpa_sim(c, probe, opt)}};
	case pinner_kind::vfio_type1:
		return {{"observation", run_vfio_type1(c, probe, opt)}};
	case pinner_kind::cma_heap:
		return {{"observation", run_cma_heap(c, probe, opt)}};
	case pinner_kind::gup_test_over_2g:
		return {{"observation", run_gup_test_over_2g(c, probe, opt)}};
	}
	throw std::logic_error("pinner case of no kind: " + c.id());
}

} // namespace

json run_case(const pinner_case &c, const suite_options &opt)
{
	std::optional<pin_module> module;
	try {
		if (!opt.pins.without_module())
			module.emplace(pin_module::open());
	} catch (const unmet_need &) {
	}
	pagemap_prober pagemap;
	const page_prober &probe = module ? static_cast<const page_prober &>(*module) : pagemap;
	return run_body(c, probe, {opt.device, opt.restricted, size_t(256) << 20, running_kernel_version()});
}

} // namespace pinmatrix::pinner_cases

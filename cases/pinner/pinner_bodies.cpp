// SPDX-License-Identifier: GPL-2.0
// The bodies of cases/pinner/: udmabuf and an on-demand-paging MR for real;
// iommufd's mock domain, the vDPA simulator and VFIO type1 detected only,
// each a SKIP with what is missing (no kernel here has them).

#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "byte_pattern.hpp"
#include "give_back.hpp"
#include "odp_data_path.hpp"
#include "pinner_cases.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"
#include "verbs.hpp"

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

// What a kernel module is here: loaded (or built in: /sys/module/NAME),
// a module file not loaded, or not built for this kernel at all.
std::string module_state(const std::string &name, const std::string &dir)
{
	std::string sysfs_name = name;
	std::replace(sysfs_name.begin(), sysfs_name.end(), '-', '_');
	if (fs::exists("/sys/module/" + sysfs_name))
		return "loaded";
	utsname u{};
	uname(&u);
	const fs::path base = fs::path("/lib/modules") / u.release / "kernel" / dir;
	for (const char *ext : {".ko", ".ko.xz", ".ko.zst", ".ko.gz"})
		if (fs::exists(base / (name + ext)))
			return "not loaded";
	return "not built";
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

[[noreturn]] void no_body(const pinner_case &c, const std::string &what)
{
	throw unmet_need(what + ", but pinmatrix has no body for " + c.id() +
			 " yet (it ran on no kernel here): " + c.skip_only_note);
}

// iommufd's self-test ioctl (drivers/iommu/iommufd/iommufd_test.h, not a
// uapi header): IOMMU_TEST_CMD = _IO(';', 0x80 + 32). Without
// CONFIG_IOMMUFD_TEST its number is past iommufd's table: ENOTTY.
[[noreturn]] void detect_iommufd_mock(const pinner_case &c)
{
	unique_fd fd(open("/dev/iommu", O_RDWR | O_CLOEXEC));
	if (!fd) {
		const std::string state = module_state("iommufd", "drivers/iommu/iommufd");
		throw unmet_need(state == "not built"
			? "no /dev/iommu: this kernel has no iommufd (CONFIG_IOMMUFD not set), so no self-test mock "
			  "domain (CONFIG_IOMMUFD_TEST)"
			: "no /dev/iommu (iommufd " + state + ": " + errno_text(errno) + ")");
	}
	uint32_t cmd[16] = {};
	if (ioctl(fd.get(), _IO(';', 0x80 + 32), cmd) && errno == ENOTTY)
		throw unmet_need("this kernel has no iommufd self-test mock domain (CONFIG_IOMMUFD_TEST): "
				 "IOMMU_TEST_CMD answers ENOTTY");
	no_body(c, "iommufd's self-test answers IOMMU_TEST_CMD");
}

[[noreturn]] void detect_vdpa_sim(const pinner_case &c)
{
	for (const auto &e : fs::directory_iterator("/dev"))
		if (e.path().filename().string().starts_with("vhost-vdpa-"))
			no_body(c, e.path().string() + " exists");
	const std::string state = module_state("vdpa_sim", "drivers/vdpa/vdpa_sim");
	if (state == "not built")
		throw unmet_need("no vDPA simulator (CONFIG_VDPA_SIM not set: no vdpa_sim module for this kernel)");
	throw unmet_need("no /dev/vhost-vdpa-* (vdpa_sim " + state +
			 "; needs vdpa_sim_net, vhost_vdpa and `vdpa dev add`)");
}

[[noreturn]] void detect_vfio_type1(const pinner_case &c)
{
	const fs::path groups = "/sys/kernel/iommu_groups";
	if (!fs::exists(groups) || fs::is_empty(groups))
		throw unmet_need("no IOMMU group (/sys/kernel/iommu_groups is empty: no IOMMU here; a QEMU guest "
				 "needs a virtual IOMMU such as -device intel-iommu), so VFIO type1 has nothing to map "
				 "through");
	const fs::path bound = "/sys/bus/pci/drivers/vfio-pci";
	if (fs::exists(bound))
		for (const auto &e : fs::directory_iterator(bound))
			if (e.path().filename().string().find(':') != std::string::npos)
				no_body(c, e.path().filename().string() + " is bound to vfio-pci");
	throw unmet_need("no device bound to vfio-pci (vfio-pci " + module_state("vfio-pci", "drivers/vfio/pci") +
			 "; IOMMU groups exist)");
}

} // namespace

json run_case(const pinner_case &c, const page_prober &probe, const body_options &opt)
{
	switch (c.kind) {
	case pinner_kind::udmabuf:
		return {{"observation", run_udmabuf(c, probe, opt)}};
	case pinner_kind::rxe_odp:
		return {{"observation", run_rxe_odp(c, probe, opt)}};
	case pinner_kind::iommufd_mock:
		detect_iommufd_mock(c);
	case pinner_kind::vdpa_sim:
		detect_vdpa_sim(c);
	case pinner_kind::vfio_type1:
		detect_vfio_type1(c);
	}
	throw std::logic_error("pinner case of no kind: " + c.id());
}

} // namespace pinmatrix::pinner_cases

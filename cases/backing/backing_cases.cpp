// SPDX-License-Identifier: GPL-2.0
#include "backing_cases.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "case_telemetry.hpp"
#include "pin_module.hpp"
#include "proc_pages.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix::backing_cases {

using nlohmann::json;

// The table.

namespace {

constexpr version_range every = every_kernel();
constexpr size_t one_page = 4096, huge_2m = size_t(2) << 20;

// Where each kernel decides, named once.
constexpr const char *migrates =
	"__gup_longterm_locked(): check_and_migrate_movable_pages() (6.1) or _folios() (6.2 on) migrates "
	"every page out of ZONE_MOVABLE and CMA before the pin holds it";
constexpr const char *hugetlb_migrates =
	"isolate_hugetlb() and migrate_pages(): alloc_migration_target() takes a pool page that may be pinned, "
	"or allocates a fresh one outside; 6.12 has no follow_hugetlb_page() (hugetlb is in follow_page_mask())";
constexpr const char *secretmem_refused = "check_vma_flags(): vma_is_secretmem() refuses any GUP with -EFAULT";
constexpr const char *faulted_under_pin =
	"__gup_longterm_locked() faults the pages in under memalloc_pin_save(): no __GFP_MOVABLE, so never "
	"ZONE_MOVABLE or CMA";

const std::vector<backing_case> table = {
	{"anon-thp", "a 2 MiB anonymous THP in restricted memory, registered whole: it leaves (moved whole or "
		     "split, both legal: observed.thp_after says which)",
	 backing::anon_thp, true, true, true, huge_2m, pages_after::out_of_restricted,
	 {{every, 0, "migrate_pages() moves the THP whole, or splits it when no 2 MiB target is free"}}},
	{"hugetlb-2m", "a 2 MiB hugetlbfs page in restricted memory: it moves to a fresh huge page outside",
	 backing::hugetlb_2m, true, true, true, huge_2m, pages_after::out_of_restricted,
	 {{every, 0, hugetlb_migrates}}},
	{"hugetlb-1g-cma", "a 1 GiB hugetlb page from hugetlb_cma: refused with ENOMEM (no gigantic page outside "
			   "CMA to move it to), never registered in place",
	 backing::hugetlb_1g, true, true, true, one_page, pages_after::out_of_restricted,
	 {{every, ENOMEM, "alloc_migrate_huge_page() (6.1) / alloc_migrate_hugetlb_folio() (6.12) never allocates "
			  "a gigantic page for migration, the pool has none outside CMA: migrate_pages() fails"}}},
	{"memfd", "a shmem page (memfd, MAP_SHARED) in restricted memory: registers and leaves",
	 backing::memfd, true, true, true, one_page, pages_after::out_of_restricted,
	 {{every, 0, "shmem needs no dirty tracking, so it is not refused as a file; migrates as any page"}}},
	{"memfd-slow-path", "memfd through a second, untouched mapping of the memfd: the slow path alone migrates "
			    "the page",
	 backing::memfd, true, true, true, one_page, pages_after::out_of_restricted,
	 {{every, 0, "shmem needs no dirty tracking, so it is not refused as a file; migrates as any page"}},
	 gup_path::slow},
	{"file-shared-writable", "a writable MR of a disk file's MAP_SHARED page in restricted memory: 6.1 "
				 "registers and moves it; from 6.5 refused (EFAULT)",
	 backing::file, true, true, true, one_page, pages_after::out_of_restricted,
	 {{before({6, 5, 0}), 0, migrates},
	  {since({6, 5, 0}, "476c1dfefab8"), EFAULT,
	   "check_vma_flags(): writable_file_mapping_allowed() refuses a FOLL_LONGTERM write to a mapping that "
	   "needs dirty tracking"}}},
	{"file-shared-writable-slow-path", "file-shared-writable through a second mapping of the file that was "
					   "never touched: the slow path alone decides",
	 backing::file, true, true, true, one_page, pages_after::out_of_restricted,
	 {{before({6, 5, 0}), 0, migrates},
	  {since({6, 5, 0}, "476c1dfefab8"), EFAULT,
	   "check_vma_flags(): writable_file_mapping_allowed() refuses a FOLL_LONGTERM write to a mapping that "
	   "needs dirty tracking"}},
	 gup_path::slow},
	{"file-shared-writable-in-place", "a writable MR of a disk file's MAP_SHARED page outside restricted memory, "
					  "written first: GUP-fast may pin it where it is, so its own file rule decides "
					  "(from 6.5 refused, EFAULT); 6.1 registers it in place",
	 backing::file, true, true, false, one_page, pages_after::out_of_restricted,
	 {{before({6, 5, 0}), 0, "6.1 pins a writable file page long-term where it may stay"},
	  {since({6, 5, 0}, "476c1dfefab8"), EFAULT,
	   "GUP-fast's gup_fast_folio_allowed() rejects a file-backed folio for a FOLL_LONGTERM write and the "
	   "slow path's writable_file_mapping_allowed() refuses it"}}},
	{"file-shared-read-only", "a read-only MR of a read-only MAP_SHARED disk file page: refused before 6.2 "
				  "(ib_umem_get() forced a write), registers and moves it from 6.2",
	 backing::file, false, false, true, one_page, pages_after::out_of_restricted,
	 {{before({6, 2, 0}), EFAULT, "ib_umem_get() took FOLL_WRITE | FOLL_FORCE for a read-only MR; "
				     "check_vma_flags() refuses a forced write to a shared mapping without VM_WRITE"},
	  {since({6, 2, 0}, "b40656aa7d55"), 0,
	   "ib_umem_get() pins read-only without FOLL_FORCE (RDMA/umem: remove FOLL_FORCE usage); then migrates"}}},
	{"file-shared-read-only-slow-path", "file-shared-read-only through a second, untouched mapping: the slow "
					    "path alone decides",
	 backing::file, false, false, true, one_page, pages_after::out_of_restricted,
	 {{before({6, 2, 0}), EFAULT, "ib_umem_get() took FOLL_WRITE | FOLL_FORCE for a read-only MR; "
				     "check_vma_flags() refuses a forced write to a shared mapping without VM_WRITE"},
	  {since({6, 2, 0}, "b40656aa7d55"), 0,
	   "ib_umem_get() pins read-only without FOLL_FORCE (RDMA/umem: remove FOLL_FORCE usage); then migrates"}},
	 gup_path::slow},
	{"anon-read-only", "a read-only MR of an anonymous page in restricted memory: it leaves as for a writable one",
	 backing::anon, false, true, true, one_page, pages_after::out_of_restricted, {{every, 0, migrates}}},
	{"unpopulated", "a writable MR of 16 never-touched anonymous pages: faulted in outside restricted memory",
	 backing::unpopulated, true, true, false, 16 * one_page, pages_after::fresh_private,
	 {{every, 0, faulted_under_pin}}, gup_path::slow},
	{"zero-page", "a read-only MR of 16 pages that map the shared zero page: replaced by private pages "
		      "outside restricted memory",
	 backing::zero_page, false, true, false, 16 * one_page, pages_after::fresh_private,
	 {{before({6, 2, 0}), 0, "ib_umem_get() forced a write fault (FOLL_WRITE | FOLL_FORCE) that replaces "
				 "the zero page"},
	  {since({6, 2, 0}, "8d6a0ac09a16"), 0,
	   "gup_must_unshare(): a read-only FOLL_LONGTERM pin in a COW mapping unshares the zero page"}}},
	{"secretmem", "a memfd_secret page: refused (EFAULT)",
	 backing::secretmem, true, true, false, one_page, pages_after::out_of_restricted,
	 {{every, EFAULT, secretmem_refused}}},
	{"secretmem-slow-path", "a memfd_secret page through a second, untouched mapping: refused (EFAULT) by the "
				"slow path alone",
	 backing::secretmem, true, true, false, one_page, pages_after::out_of_restricted,
	 {{every, EFAULT, secretmem_refused}}, gup_path::slow},
};

} // namespace

const std::vector<backing_case> &case_table() { return table; }

const char *name(gup_path p)
{
	return p == gup_path::fast ? "fast" : "slow";
}

const version_outcome *outcome_for(const backing_case &c, const std::optional<kernel_version> &v)
{
	return row_for_kernel(c.outcomes, v);
}

// The body.

namespace {

// Where the row's memory is looked for, and the RDMA device.
struct body_options {
	std::string device;		// RDMA device; empty: the first one
	placement restricted = placement::movable;
	bool restricted_present = true;	// false: rows that start restricted SKIP
	std::filesystem::path disk_dir;	// the file backing's directory
};

json page_counts(const std::vector<pinmatrix_page> &pages)
{
	size_t absent = 0, zero = 0, restricted = 0, ordinary = 0, unknown = 0;
	for (const auto &p : pages) {
		if (!(p.flags & PINMATRIX_PAGE_PRESENT))
			absent++;
		else if (p.flags & PINMATRIX_PAGE_ZERO)
			zero++;
		else if (const auto where = classify(p); !where)
			unknown++;
		else
			(*where == placement::ordinary ? ordinary : restricted)++;
	}
	return {{"absent", absent}, {"zero_page", zero}, {"restricted", restricted}, {"ordinary", ordinary},
		{"unknown", unknown}, {"first_pfn", pages.empty() ? 0 : pages.front().pfn}};
}

size_t pages_moved(const std::vector<pinmatrix_page> &before, const std::vector<pinmatrix_page> &after)
{
	size_t moved = 0;
	for (size_t i = 0; i < before.size() && i < after.size(); i++)
		moved += before[i].pfn && after[i].pfn && before[i].pfn != after[i].pfn;
	return moved;
}

// What became of a registered THP: one folio still (512 contiguous PFNs
// from an aligned head that /proc/kpageflags calls a THP) or split, and
// whether it moved. The fields must agree with pages_moved: a folio "moved
// whole" with some of its pages where they were is a bug of this suite's
// record, said in "inconsistent" (the judge's ERROR).
json thp_fate(uintptr_t addr, const std::vector<pinmatrix_page> &before, const std::vector<pinmatrix_page> &after)
{
	bool contiguous = after.front().pfn % after.size() == 0;
	for (size_t i = 1; contiguous && i < after.size(); i++)
		contiguous = after[i].pfn == after.front().pfn + i;
	const auto head = read_proc_pages(getpid(), addr, 1).at(0);
	const bool one_folio = contiguous && head.kpageflags && (*head.kpageflags >> 22 & 1);
	const size_t moved = pages_moved(before, after), n = after.size();
	json fate = {{"thp_after", !moved ? (one_folio ? "not moved (one 2 MiB folio)" : "not moved (split)")
				  : one_folio ? "moved whole (one 2 MiB folio)"
					      : "split (4 KiB pages, not one 2 MiB folio)"}};
	if (one_folio && moved && moved != n)
		fate["inconsistent"] = "one 2 MiB folio after the registration, but " + std::to_string(moved) + " of " +
				       std::to_string(n) + " pages moved";
	return fate;
}

// Fresh anonymous pages written without any pin: where the allocator puts
// them here, so that "outside restricted memory" after a pin means more
// than that the allocator never went there.
json fresh_pages_control(const page_prober &probe)
{
	mapping m = populated_pages(16 * page_size());
	return page_counts(probe.probe_pages(m.addr(), 16));
}

// Where a row's registration starts, and the second mapping that holds it
// for the slow path.
struct pin_target {
	std::byte *start;
	std::optional<mapping> view;
};

// The GUP path the pin meets, set up just before it. Fast: every page
// touched through the registered mapping (written for a writable MR of a
// writable mapping, so its PTE is present, writable and dirty; else read).
// Slow: a second mapping of the same file, never touched, so GUP-fast finds
// no PTE (a row of never-touched pages is its own). What held is recorded:
// the pages present before the pin.
pin_target prepare_path(const backing_case &c, const backed_region &region, size_t length, json &out)
{
	const size_t ps = page_size(), n = length / ps;
	pin_target t{region.start(), std::nullopt};
	const bool write = c.path == gup_path::fast && c.writable_mr && c.writable_mapping;
	if (c.path == gup_path::slow && region.fd) {
		const int prot = PROT_READ | (c.writable_mapping ? PROT_WRITE : 0);
		t.view.emplace(mapping::map(region.map.size(), prot, MAP_SHARED, region.fd.get()));
		t.start = t.view->data() + region.offset;
	} else if (c.path == gup_path::fast) {
		for (size_t off = 0; off < length; off += ps) {
			auto *b = reinterpret_cast<volatile std::byte *>(t.start + off);
			const std::byte v = *b;
			if (write)
				*b = v;
		}
	}
	const auto pages = read_proc_pages(getpid(), reinterpret_cast<uintptr_t>(t.start), n);
	const auto present = size_t(std::count_if(pages.begin(), pages.end(), [](const proc_page &p) { return p.present; }));
	out = {{"path", name(c.path)}, {"pages", n}, {"present_before", present}, {"written_before", write}};
	return t;
}

void require_memory(const backing_case &c, const body_options &opt)
{
	if (c.starts_restricted && !opt.restricted_present)
		throw unmet_need("this boot has no restricted memory to start in (boot movable, cma or hugetlb_cma)");
	if (c.kind == backing::hugetlb_1g && opt.restricted != placement::cma)
		throw unmet_need("a 1 GiB hugetlb page in restricted memory comes from hugetlb_cma (boot hugetlb_cma)");
}

json run_with(const backing_case &c, const page_prober &probe, const body_options &opt)
{
	require_memory(c, opt);
	const verbs_device dev = verbs_device::open(opt.device);
	memory_options mo;
	mo.probe = &probe;
	if (c.starts_restricted)
		mo.restricted = opt.restricted;
	mo.writable_mapping = c.writable_mapping;
	mo.disk_dir = opt.disk_dir;
	const backed_region region = make_backing(c.kind, mo);

	const size_t length = std::min(c.register_bytes, region.size()), n = length / page_size();
	const auto before = probe.probe_pages(region.start_addr(), n);
	json path;
	const pin_target target = prepare_path(c, region, length, path);
	const registration reg =
		register_memory(dev, target.start, length, c.writable_mr ? registration_access : 0);
	const auto after = probe.probe_pages(region.start_addr(), n);
	json o = {{"backing", name(c.kind)},
		  {"pages", n},
		  {"errno", reg.err},
		  {"errno_name", reg.err ? strerrorname_np(reg.err) : "0"},
		  {"latency_ns", reg.latency_ns},
		  {"before", page_counts(before)},
		  {"after", page_counts(after)},
		  {"pages_moved", pages_moved(before, after)},
		  {"probe", probe.probe_name()},
		  {"placement", name(opt.restricted)},
		  {"device", dev.name()},
		  {"gup_path", path}};
	if (c.kind == backing::anon_thp && !reg.err)
		o.update(thp_fate(region.start_addr(), before, after));
	if (c.after == pages_after::fresh_private)
		o["control_fresh_pages"] = fresh_pages_control(probe);
	return {{"observation", o}};
}

// The judge.

std::string errno_text(int err)
{
	return err ? strerrorname_np(err) : "success";
}

std::string expected_summary(const backing_case &c, const version_outcome *want)
{
	if (!want)
		return "unknown: the outcome depends on the kernel version, which cannot be read";
	if (want->err)
		return std::string("ibv_reg_mr refused with ") + errno_text(want->err);
	return c.after == pages_after::fresh_private
		       ? "registers on present private pages, none the zero page, none in restricted memory"
		       : "registers, and no page of it is left in restricted memory";
}

// Why a registration that succeeded breaks the row, or "".
std::string pages_problem(const backing_case &c, const json &after, size_t pages)
{
	const auto count = [&](const char *k) { return after.at(k).get<size_t>(); };
	if (count("restricted"))
		return "registered with " + std::to_string(count("restricted")) + " of " + std::to_string(pages) +
		       " pages still in restricted memory (a long-term pin succeeded in place)";
	if (c.after == pages_after::fresh_private && (count("zero_page") || count("absent")))
		return "registered with " + std::to_string(count("zero_page")) + " page(s) still the zero page and " +
		       std::to_string(count("absent")) + " absent";
	return "";
}

// Why a GUP-fast row whose rule is GUP-fast's own (a page found outside
// restricted memory) could not reach it, or "": GUP-fast sends a page it
// may not pin where it is (ZONE_MOVABLE, CMA) to the slow path before any
// other rule, so on a page found in restricted memory the slow path
// decided. The allocator put it there: this boot cannot give the row.
std::string fast_rule_out_of_reach(const backing_case &c, const json &o)
{
	if (c.path != gup_path::fast || c.starts_restricted)
		return "";
	const size_t restricted = o.at("before").at("restricted");
	if (!restricted)
		return "";
	return std::to_string(restricted) + " of " + std::to_string(o.at("pages").get<size_t>()) +
	       " pages were in restricted memory before the pin: GUP-fast hands such a page to the slow path "
	       "before its own rule, which this row checks (the ordinary boot, whose page cache is outside "
	       "restricted memory, gives the row)";
}

// The GUP paths of the row's one registration as the kernel trace saw them
// (trace.gup_paths of lib/diagnosis/kernel_trace.hpp), or null where this
// kernel does not let them be seen.
json traced_gup_paths(const json &o)
{
	const json regs = o.value("registrations", json::array());
	if (!regs.is_array() || regs.size() != 1)
		return nullptr;
	return regs[0].value("trace", json::object()).value("gup_paths", json());
}

// "GUP-fast pinned 1 of 1 pages, the slow path was handed 0 (traced)".
std::string traced_text(const json &g)
{
	return "GUP-fast pinned " + std::to_string(g.value("gup_fast_pinned", int64_t(0))) + " of " +
	       std::to_string(g.value("requested", int64_t(0))) + " pages, the slow path was handed " +
	       std::to_string(g.value("slow_path_pages", int64_t(0))) + " (traced)";
}

// The path a row meant to reach, as the page table was before the pin:
// GUP-fast decides only for pages present there, and the slow path alone
// only where none was. Otherwise the row tested the other path again. Where
// the kernel trace shows which path took the pages, that is recorded and
// must agree: a slow-path row whose pages GUP-fast pinned tested GUP-fast.
void judge_gup_path(const backing_case &c, const json &o, case_record &r)
{
	const json path = o.value("gup_path", json::object());
	const size_t pages = path.value("pages", size_t(0)), present = path.value("present_before", size_t(0));
	const json traced = traced_gup_paths(o);
	(*r.observed)["gup_path"]["decided_by"] =
		traced.is_object() ? json(traced_text(traced)) : json("not traced on this kernel");
	if (!path.contains("present_before"))
		r.undecided("the GUP path", "the page table before the pin was not recorded");
	else if (c.path == gup_path::fast && present != pages)
		r.undecided("the GUP-fast variant", "only " + std::to_string(present) + " of " + std::to_string(pages) +
			    " pages were present before the pin: GUP-fast could not decide them");
	else if (c.path == gup_path::slow && present)
		r.undecided("the slow-path variant", std::to_string(present) + " of " + std::to_string(pages) +
			    " pages were mapped before the pin: GUP-fast may have decided them");
	else if (c.path == gup_path::slow && traced.is_object() && traced.value("gup_fast_pinned", int64_t(0)) > 0)
		r.undecided("the slow-path variant", traced_text(traced) + ", although no page was mapped before the pin");
}

// A row of fresh pages: that none landed in restricted memory shows
// something only where the control's fresh pages (no pin) did land there.
// No control is a step that failed; a control with none there is this
// machine's allocator, which never went there: a SKIP with why.
void judge_control(const backing_case &c, const json &observation, case_record &r)
{
	if (c.after != pages_after::fresh_private || r.outcome != verdict::pass)
		return;
	if (!observation.contains("control_fresh_pages")) {
		r.undecided("none in restricted memory", "no control of where fresh pages land without a pin");
		return;
	}
	if (!observation["control_fresh_pages"].at("restricted").get<size_t>()) {
		r.outcome = verdict::skip;
		r.add_reason("the control's fresh pages (no pin) landed in no restricted memory either: that the "
			     "pin's landed outside it shows nothing here");
	}
}

void expects(const backing_case &c, const std::optional<kernel_version> &kv, case_record &r)
{
	const version_outcome *want = outcome_for(c, kv);
	r.details = {{"source", c.checks}, {"backing", name(c.kind)}};
	r.expected = {{"summary", expected_summary(c, want)},
		      {"mr", c.writable_mr ? "writable" : "read-only"},
		      {"kernel_version", kv ? json(kv->text()) : json(nullptr)}};
	if (want) {
		r.expected["errno"] = want->err;
		r.expected["errno_name"] = errno_text(want->err);
		r.expected["because"] = want->because;
		r.expected["versions"] = range_text(want->versions);
	}
}

void judge(const backing_case &c, const std::optional<kernel_version> &v, const json &observation, case_record &r)
{
	r.observed = observation;
	const int err = observation.at("errno");
	(*r.observed)["summary"] = err ? "refused: " + errno_text(err) : "registered";
	const version_outcome *want = outcome_for(c, v);
	if (!want) {
		r.outcome = verdict::skip;
		r.add_reason("the kernel's upstream version cannot be read and this row's outcome depends on it");
		return;
	}
	judge_gup_path(c, observation, r);
	if (const auto why = fast_rule_out_of_reach(c, observation); !why.empty() && r.outcome == verdict::pass) {
		r.outcome = verdict::skip;
		r.add_reason(why);
		return;
	}
	if (err != want->err) {
		r.outcome = verdict::fail;
		r.add_reason("ibv_reg_mr: " + errno_text(err) + ", expected " + errno_text(want->err) + " on " +
			     (v ? v->text() : std::string("this kernel")) + " (" + want->because + ")");
		if (const json traced = traced_gup_paths(observation); traced.is_object())
			r.add_reason(traced_text(traced));
		return;
	}
	if (err)
		return;
	const size_t pages = observation.at("pages");
	if (const auto problem = pages_problem(c, observation.at("after"), pages); !problem.empty()) {
		r.outcome = verdict::fail;
		r.add_reason(problem);
		if (const json traced = traced_gup_paths(observation); traced.is_object())
			r.add_reason(traced_text(traced));
	} else if (const size_t before = observation.at("before").at("restricted"); c.starts_restricted && before < pages) {
		r.outcome = verdict::skip;
		r.add_reason(observation.value("placement", std::string()) == "ordinary"
				     ? "this boot (ordinary) has no restricted memory for the row's pages to start in: "
				       "nothing was checked (boot movable, cma or hugetlb_cma)"
				     : "only " + std::to_string(before) + " of " + std::to_string(pages) +
					       " pages were in restricted memory when registered (reclaimed after they "
					       "were found?): nothing was checked");
	} else if (observation.at("after").at("unknown").get<size_t>()) {
		r.outcome = verdict::skip;
		r.add_reason("the probe cannot place some of the registered pages (" +
			     observation.value("probe", std::string("?")) + "): whether any stayed is unknown");
	}
	judge_control(c, observation, r);
	if (observation.contains("inconsistent")) {
		r.outcome = verdict::error;
		r.add_reason("the record contradicts itself (a bug of pinmatrix): " +
			     observation.value("inconsistent", std::string("?")));
	}
}

// The file backing's directory: PINMATRIX_DISK_DIR (the guest's job sets
// it to an ext4 scratch filesystem), else /var/tmp.
std::filesystem::path disk_dir()
{
	const char *dir = getenv("PINMATRIX_DISK_DIR");
	return dir && *dir ? dir : "/var/tmp";
}

void facts(const suite_options &, json &f)
{
	const auto v = running_kernel_version();
	f["kernel_version"] = v ? json(v->text()) : json(nullptr);
	f["disk_dir"] = disk_dir().string();
}

// A file on a disk filesystem: the guest mounts one (vm/guest/job.sh,
// PINMATRIX_DISK_DIR), which costs a boot about 2 s under TCG.
guest_needs prepares(const backing_case &c) { return {.disk_dir = c.kind == backing::file}; }

} // namespace

json run_case(const backing_case &c, const suite_options &opt)
{
	const auto probe = open_page_probe(opt.pins.without_module());
	json result, telemetry_json;
	{
		// The row's registration, traced (case_telemetry.hpp).
		case_telemetry telemetry(probe.module ? &*probe.module : nullptr);
		result = run_with(c, probe.get(), {opt.device, opt.restricted, opt.restricted_present, disk_dir()});
		telemetry_json = telemetry.finish();
	}
	result["observation"].update(telemetry_json);
	return result;
}

const suite_definition<backing_case> definition = {
	.name = "backing",
	.table = case_table,
	.needs = {.page_probe = true, .trace_session = true, .cma_filled = true},
	.run = run_case,
	.expects = expects,
	.judge = judge,
	.facts = facts,
	.prepares = prepares,
};

} // namespace pinmatrix::backing_cases

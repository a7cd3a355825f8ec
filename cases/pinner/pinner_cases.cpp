// SPDX-License-Identifier: GPL-2.0
#include "pinner_cases.hpp"

#include <utility>

#include "suite.hpp"
#include "sys_error.hpp"

namespace pinmatrix::pinner_cases {

using nlohmann::json;

// The table.

namespace {


const std::vector<pinner_case> table = {
	{"udmabuf",
	 "a memfd page in restricted memory made a udmabuf (UDMABUF_CREATE) and held: from 6.11 the page has "
	 "left restricted memory (memfd_pin_folios()); before 6.11 it stays (a known gap)",
	 "UDMABUF_CREATE",
	 pinner_kind::udmabuf,
	 {{before({6, 11, 0}), page_fate::stays_gap,
	   "drivers/dma-buf/udmabuf.c: udmabuf_create() takes shmem_read_mapping_page() references, no pin"},
	  {since({6, 11, 0}, "c6a3194c05e7"), page_fate::moved,
	   "drivers/dma-buf/udmabuf.c: udmabuf_pin_folios() -> mm/gup.c: memfd_pin_folios() -> "
	   "check_and_migrate_movable_folios()"}}},
	{"rxe-odp",
	 "ibv_reg_mr(IBV_ACCESS_ON_DEMAND) on a page in restricted memory, on a device with ODP: registered, no "
	 "pin (the page stays), and its memory can be given back with the MR held",
	 "ibv_reg_mr(IBV_ACCESS_ON_DEMAND)",
	 pinner_kind::rxe_odp,
	 {{every_kernel(), page_fate::stays_no_pin,
	   "drivers/infiniband/core/umem_odp.c: ib_umem_odp_get() (mmu interval notifier, hmm_range_fault(): no "
	   "pin); rxe: drivers/infiniband/sw/rxe/rxe_odp.c (not in 6.12; in 7.2)"}}},
	{"iommufd-mock",
	 "a page in restricted memory mapped into an iommufd IOAS with the self-test's mock domain attached "
	 "(IOMMU_IOAS_MAP, CONFIG_IOMMUFD_TEST) and held: the page has left restricted memory, the mock domain "
	 "translates the IOVA to the page the CPU sees, and its memory can be given back with the mapping held",
	 "IOMMU_IOAS_MAP (mock domain)",
	 pinner_kind::iommufd_mock,
	 {{every_kernel(), page_fate::moved,
	   "drivers/iommu/iommufd/pages.c: pfn_reader_user_pin() -> pin_user_pages_fast(FOLL_LONGTERM) -> "
	   "check_and_migrate_movable_pages() (iommufd is 6.2 on)"}}},
	{"vdpa-sim",
	 "a page in restricted memory mapped for the vDPA network simulator through vhost-vdpa "
	 "(VHOST_IOTLB_UPDATE, a device that maps by physical address) and held: the page has left restricted "
	 "memory, and its memory can be given back with the mapping held",
	 "VHOST_IOTLB_UPDATE on /dev/vhost-vdpa-N",
	 pinner_kind::vdpa_sim,
	 {{every_kernel(), page_fate::moved,
	   "drivers/vhost/vdpa.c: vhost_vdpa_pa_map() -> pin_user_pages(FOLL_LONGTERM) -> "
	   "check_and_migrate_movable_pages()"}}},
	{"vfio-type1",
	 "a page in restricted memory mapped for a device bound to vfio-pci (VFIO_IOMMU_MAP_DMA, type1; in the "
	 "guest QEMU's edu device behind intel-iommu) and held: the page has left restricted memory, the device's "
	 "DMA through the mapping lands where the CPU reads, and the memory can be given back with it held",
	 "VFIO_IOMMU_MAP_DMA (type1)",
	 pinner_kind::vfio_type1,
	 {{every_kernel(), page_fate::moved,
	   "drivers/vfio/vfio_iommu_type1.c: vaddr_get_pfns() -> pin_user_pages_remote(FOLL_LONGTERM) -> "
	   "check_and_migrate_movable_pages()"}}},
	{"cma-heap",
	 "ibv_reg_mr on a page of a CMA dma-heap buffer (/dev/dma_heap/<the CMA area>, mapped): a page in "
	 "MIGRATE_CMA that no migration can move (cma_alloc()ed, on no LRU). The long-term pin must end: refused "
	 "with an errno, or held in place; a registration that does not return is the kernel retrying without end",
	 "ibv_reg_mr on a CMA dma-heap mapping",
	 pinner_kind::cma_heap,
	 {{every_kernel(), page_fate::never_movable,
	   "mm/gup.c: __gup_longterm_locked() retries while check_and_migrate_movable_pages() returns -EAGAIN; "
	   "a folio it cannot isolate from the LRU is in no migration list, and an empty list is -EAGAIN again "
	   "(drivers/dma-buf/heaps/cma_heap.c: cma_heap_vm_fault() hands out its cma_alloc()ed pages)"}}},
	{"gup-test-over-2g",
	 "2 GiB and a page, pinned long-term in one pin_user_pages() call (gup_test's PIN_LONGTERM_BENCHMARK with "
	 "every page in one call; a guest with the memory for it, --memory 3584): the whole buffer is pinned, and "
	 "its pages in restricted memory (one probed per 2 MiB) have left it",
	 "PIN_LONGTERM_BENCHMARK (gup_test), 2 GiB + 4 KiB in one call",
	 pinner_kind::gup_test_over_2g,
	 {{every_kernel(), page_fate::moved,
	   "mm/gup_test.c: __gup_test_ioctl() -> pin_user_pages(FOLL_LONGTERM) -> __gup_longterm_locked() -> "
	   "check_and_migrate_movable_pages() of every page of the call at once"}},
	 false},
};

std::string fate_summary(page_fate f, const std::string &versions)
{
	switch (f) {
	case page_fate::moved:
		return "the pin succeeds and the page has left restricted memory (a long-term pin migrates it first); "
		       "its memory can be given back with the pin held";
	case page_fate::stays_gap:
		return "stays in place (known gap of kernels " + versions +
		       ": plain page references, no long-term pin); its memory cannot be given back while held";
	case page_fate::stays_no_pin:
		return "registered with no pin: the page stays in restricted memory (no migration) and its memory "
		       "can be given back with the registration held";
	case page_fate::never_movable:
		return "the registration returns: refused with an errno, or registered with the page in place (it "
		       "cannot move); never a retry without end";
	}
	return "";
}

} // namespace

const char *name(page_fate f)
{
	switch (f) {
	case page_fate::moved:
		return "moved";
	case page_fate::stays_gap:
		return "stays (known gap)";
	case page_fate::stays_no_pin:
		return "stays (no pin)";
	case page_fate::never_movable:
		return "never movable";
	}
	return "?";
}

const std::vector<pinner_case> &case_table() { return table; }

expectation expectation_for(const pinner_case &c, const std::optional<kernel_version> &v)
{
	expectation e;
	e.kernel = v ? v->text() : "unknown";
	const version_expectation *row = row_for_kernel(c.by_version, v);
	if (!row) {
		e.summary = "unknown: this row's outcome depends on the kernel's upstream version, which " +
			    std::string(v ? "no row covers" : "cannot be read");
		return e;
	}
	e.fate = row->fate;
	e.versions = range_text(row->versions);
	e.source = row->source;
	e.summary = fate_summary(row->fate, e.versions);
	// A heap's page is its heap's, pinned or not: no give-back to ask; nor
	// of a pin that ended before the case could ask.
	if (row->fate != page_fate::never_movable && c.held)
		e.given_back_while_held = row->fate != page_fate::stays_gap;
	return e;
}

// The judge.

namespace {

void expects(const pinner_case &c, const std::optional<kernel_version> &v, case_record &r)
{
	const expectation e = expectation_for(c, v);
	r.details = {{"source", c.checks}, {"pinner", c.pinner}};
	r.expected = {{"summary", e.summary},
		      {"kernel_version", v ? json(v->text()) : json(nullptr)},
		      {"page", e.fate ? name(*e.fate) : "unknown"},
		      {"versions", e.versions},
		      {"kernel_source", e.source},
		      {"memory_given_back_while_held",
		       e.given_back_while_held ? json(*e.given_back_while_held) : json(nullptr)}};
}

// A give-back that decided nothing (the oracle said neither yes nor no, or
// a refusal the control shares): this machine could not give the answer,
// so a case whose other checks held is a SKIP that says so, never a PASS,
// as in the pin suite (cases/pin/pin_judge.cpp).
void give_back_decided_nothing(case_record &r, const std::string &check, const std::string &why)
{
	if (r.outcome == verdict::pass)
		r.outcome = verdict::skip;
	r.add_reason(check + " decided nothing: " + why);
}

// The give-back oracle's answers: with the pin held, and (the control) with
// it released. An unknown answer decides nothing, and neither does a refusal
// when even the control could not give the memory back; where the machine
// has no oracle (method "none"), the check is not this machine's.
void judge_give_back(const expectation &e, const json &o, case_record &r)
{
	if (!o.contains("give_back") || !e.given_back_while_held)
		return;
	const auto &g = o["give_back"];
	const json held = g.value("with_pin_held", json()).value("given_back", json());
	const json control = g.value("released", json()).value("given_back", json());
	const json asked = g.value("with_pin_held", json::object());
	if (!held.is_boolean() && asked.value("method", std::string()) == "none") {
		// No oracle on this machine: a check it cannot own, said so.
		r.add_reason("the give-back is not checked here: " + asked.value("detail", std::string("no oracle")));
		return;
	}
	if (!held.is_boolean()) {
		give_back_decided_nothing(r, "the give-back with the pin held",
					  "the oracle answered no yes or no (" +
						  asked.value("detail", std::string("no answer")) + ")");
		return;
	}
	// Memory that went back decides; a refusal only where the control's went back.
	if (!held.get<bool>() && control != json(true)) {
		give_back_decided_nothing(r, "the give-back with the pin held",
					  "even with the pin released the memory did not go back");
		return;
	}
	if (held.get<bool>() == *e.given_back_while_held)
		return;
	r.outcome = verdict::fail;
	r.add_reason(std::string("memory ") + (held.get<bool>() ? "given back" : "not given back") +
		     " with the pin held (expected " + (*e.given_back_while_held ? "given back" : "refused") + ")");
}

// An on-demand MR must still name the page: a device write through it, in
// place and after the memory went back (the page moved), is what the CPU
// reads there. Decided only where the same write through an ordinary MR
// (the control) is.
void judge_device_writes(const json &o, case_record &r)
{
	if (!o.contains("device_write"))
		return;
	const auto &w = o["device_write"];
	if (w.value("control", json()).value("same", false) != true) {
		r.undecided("the device writes through the on-demand MR",
			    "the same write through an ordinary MR failed (" +
				    w.value("control", json()).value("detail", std::string("not run")) + ")");
		return;
	}
	const std::pair<const char *, const char *> writes[] = {{"in_place", "in place"},
								 {"after_give_back", "after the memory went back"}};
	for (const auto &[key, when] : writes) {
		if (!w.contains(key))
			continue;
		if (w[key].value("same", false) != true) {
			r.outcome = verdict::fail;
			r.add_reason(std::string("device write through the on-demand MR ") + when + ": " +
				     w[key].value("detail", std::string("?")) + " (through an ordinary MR: " +
				     w["control"].value("detail", std::string("?")) + ")");
		}
	}
}

// The ODP data path at offsets (odp_data_path.hpp): each transfer decided
// where its control, the same through an ordinary MR, went right. One the
// device does not offer (rc_odp_caps) is no check.
void judge_data_path(const json &o, case_record &r)
{
	if (!o.contains("data_path"))
		return;
	for (const auto &t : o["data_path"].value("transfers", json::array())) {
		const std::string what = t.value("transfer", std::string("a transfer"));
		const json odp = t.value("odp", json::object()), ordinary = t.value("ordinary", json::object());
		if (odp.value("offered", true) == false)
			continue;
		if (ordinary.value("same", false) != true) {
			r.undecided(what + " through an ODP MR", "the same through an ordinary MR failed (" +
				    ordinary.value("detail", std::string("not run")) + ")");
			continue;
		}
		if (odp.value("same", false) != true) {
			r.outcome = verdict::fail;
			r.add_reason(what + " through an ODP MR: " + odp.value("detail", std::string("?")));
		}
	}
}

// A device that writes through the pin (VFIO's edu): its DMA must land
// where the CPU reads the page, which has moved. No device write is a note.
void judge_pin_device_write(const json &o, case_record &r)
{
	if (!o.contains("pin_device_write"))
		return;
	const auto &w = o["pin_device_write"];
	const std::string detail = w.value("detail", std::string("?"));
	if (w.value("same", json()) == json(false)) {
		r.outcome = verdict::fail;
		r.add_reason("the device's access through the pin: " + detail);
	} else if (!w.value("same", json()).is_boolean()) {
		r.add_reason(detail);
	}
}

// One pin call over a buffer (gup_test): the whole buffer pinned, and no
// probed page of it left in restricted memory. gup_test passes on no errno
// for a refused call: how far it got is the evidence. False when the pin
// was refused (nothing else to judge then).
bool judge_one_call(const json &o, case_record &r)
{
	if (!o.contains("requested_bytes"))
		return true;
	const uint64_t want = o["requested_bytes"], got = o.value("pinned_bytes", uint64_t(0));
	if (got != want) {
		r.outcome = verdict::fail;
		r.add_reason("one pin_user_pages(FOLL_LONGTERM) call of " + std::to_string(want) + " bytes pinned " +
			     std::to_string(got) + ": refused (gup_test passes on no errno; the kernel log says why)");
		(*r.observed)["summary"] = "one long-term pin of " + std::to_string(want) + " bytes refused";
		return false;
	}
	const json &s = o.value("sampled", json::object());
	if (s.value("restricted_before", uint64_t(0)) == 0)
		r.add_reason("no probed page of the buffer was in " + o.value("placement", std::string("restricted")) +
			     " memory: the pin's size is checked, not where its pages went");
	if (const uint64_t left = s.value("restricted_after", uint64_t(0)); left) {
		r.outcome = verdict::fail;
		r.add_reason(std::to_string(left) + " of the " + std::to_string(s.value("pages", 0)) +
			     " probed pages (one per 2 MiB) still in " + o.value("placement", std::string("restricted")) +
			     " memory after the pin (a long-term pin succeeded in place)");
	}
	return true;
}

void judge_page(const expectation &e, const json &o, case_record &r)
{
	const std::string restricted = o.value("placement", std::string("restricted"));
	const std::string after = o.at("after").value("placement", std::string("unknown"));
	const bool stayed = after == restricted;
	const json pinned = o.at("after").value("maybe_dma_pinned", json());
	switch (*e.fate) {
	case page_fate::moved:
		if (stayed) {
			r.outcome = verdict::fail;
			r.add_reason("the pin succeeded with the page still in " + restricted +
				     " memory (a long-term pin succeeded in place)");
		}
		break;
	case page_fate::stays_gap:
		r.add_reason(stayed ? "stays in place (known gap of kernels " + e.versions + ")"
				    : "the page moved to " + after + ": this kernel pins long-term (a backport)");
		break;
	case page_fate::stays_no_pin:
		if (!stayed) {
			r.outcome = verdict::fail;
			r.add_reason("the page moved to " + after + ": an on-demand registration migrated it");
		}
		if (pinned == json(true)) {
			r.outcome = verdict::fail;
			r.add_reason("the page is DMA-pinned (folio_maybe_dma_pinned()) after an on-demand "
				     "registration");
		}
		judge_device_writes(o, r);
		judge_data_path(o, r);
		break;
	case page_fate::never_movable:	// judge_never_movable()
		break;
	}
}

// A page no migration can move: the registration must have returned,
// either way; one still in the kernel at the bound is the retry without end.
// The same buffer as a dma-buf MR (no user page pinned) is a note.
void judge_never_movable(const pinner_case &c, const json &o, case_record &r)
{
	const std::string before = o.at("before").value("placement", std::string("?"));
	const std::string after = o.at("after").value("placement", std::string("?"));
	const std::string pinner(c.pinner);
	if (before != "cma") {
		r.undecided("the heap's page", "it is in " + before + " memory, not in a MIGRATE_CMA pageblock");
	} else if (!o.value("returned", false)) {
		r.outcome = verdict::fail;
		r.add_reason(pinner + " did not return in " + std::to_string(o.value("bound_s", 0)) + " s (" +
			     o.value("at_bound", std::string("?")) + "; " +
			     (o.value("ended_after_kill", false) ? "it ended at SIGKILL" : "it outlived its SIGKILL") +
			     "): the long-term pin retries without end on a page no migration can move");
		(*r.observed)["summary"] = pinner + " never returned; page " + before;
	} else {
		const int err = o.value("errno", 0);
		r.add_reason(err ? "refused with " + errno_name(err)
				 : "registered with the page in place (" + after + ")");
		(*r.observed)["summary"] = pinner + (err ? " " + errno_name(err) : std::string(" ok")) + "; page " +
					   before + " -> " + after;
	}
	if (o.at("before").contains("probe"))
		r.add_reason("the page's placement from the " + o["before"].value("probe", std::string("?")));
	if (o.contains("dmabuf_mr"))
		r.add_reason("the buffer as a dma-buf MR: " + o["dmabuf_mr"].value("detail", std::string("?")));
}

void judge(const pinner_case &c, const std::optional<kernel_version> &v, const json &observation, case_record &r)
{
	const expectation e = expectation_for(c, v);
	r.observed = observation;
	if (!e.fate) {
		r.outcome = verdict::skip;
		r.add_reason("what this kernel must do is " + e.summary);
		return;
	}
	if (e.fate == page_fate::never_movable) {
		judge_never_movable(c, observation, r);
		return;
	}
	if (const int err = observation.at("errno"); err) {
		r.outcome = verdict::fail;
		r.add_reason(std::string(c.pinner) + " failed with errno " + std::to_string(err) + " (expected it to " +
			     "succeed)");
		return;
	}
	if (!judge_one_call(observation, r))
		return;
	judge_page(e, observation, r);
	judge_pin_device_write(observation, r);
	judge_give_back(e, observation, r);
	const std::string before = observation.at("before").value("placement", std::string("?"));
	const std::string after = observation.at("after").value("placement", std::string("?"));
	(*r.observed)["summary"] = std::string(c.pinner) + " ok; page " + before + " -> " + after;
}

void facts(const suite_options &opt, json &f)
{
	const auto v = running_kernel_version();
	f["placement"] = name(opt.restricted);
	f["kernel_version"] = v ? json(v->text()) : json(nullptr);
}

guest_needs prepares(const pinner_case &c)
{
	return {.vdpa_sim = c.kind == pinner_kind::vdpa_sim, .vfio_edu = c.kind == pinner_kind::vfio_type1};
}

} // namespace

const suite_definition<pinner_case> definition = {
	.name = "pinner",
	.table = case_table,
	.needs = {.restricted_memory = true, .page_probe = true},
	.run = run_case,
	.expects = expects,
	.judge = judge,
	.facts = facts,
	.prepares = prepares,
};

} // namespace pinmatrix::pinner_cases

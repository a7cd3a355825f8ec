// SPDX-License-Identifier: GPL-2.0
#include "case_telemetry.hpp"

#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include "kernel_info.hpp"
#include "kernel_trace.hpp"
#include "mapping.hpp"
#include "placement.hpp"
#include "proc_pages.hpp"
#include "registration_telemetry.hpp"
#include "text.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

std::unique_ptr<trace_session> &session_slot()
{
	// Destroyed at exit in the process that set it up (the session's own
	// destructor does nothing in a forked child).
	static std::unique_ptr<trace_session> session;
	return session;
}

std::string access_text(int access)
{
	static const std::pair<int, const char *> bits[] = {
		{IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"},   {IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"},
		{IBV_ACCESS_REMOTE_READ, "REMOTE_READ"},   {IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC"},
		{IBV_ACCESS_MW_BIND, "MW_BIND"},	   {IBV_ACCESS_ZERO_BASED, "ZERO_BASED"},
		{IBV_ACCESS_ON_DEMAND, "ON_DEMAND"},	   {IBV_ACCESS_HUGETLB, "HUGETLB"},
		{IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING"}};
	std::vector<std::string_view> set;
	for (const auto &[bit, name] : bits)
		if (access & bit)
			set.push_back(name);
	return set.empty() ? "0" : join(set, "|");
}

// What the API asks of GUP (the kernel sources, as FACTS.md has them).
struct api_traits {
	const char *api;
	bool foll_longterm;
	const char *how;
};
const api_traits apis[] = {
	{"ibv_reg_mr", true, "ib_umem_get -> pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM)"},
};

const api_traits &traits_of(const std::string &api)
{
	for (const auto &a : apis)
		if (api == a.api)
			return a;
	static const api_traits unknown{"", false, "unknown"};
	return unknown;
}

void write_text_file(const std::string &path, const std::string &text)
{
	std::ofstream out(path);
	out << text;
}

constexpr size_t max_pages_recorded = 64;
constexpr size_t max_events_recorded = 200;

json memlock_json(const case_telemetry::snapshot &b, const case_telemetry::snapshot &a)
{
	auto limit = [](const std::optional<uint64_t> &v) { return v ? json(*v) : json("unlimited"); };
	return {{"limit_bytes", limit(b.memlock_soft)},
		{"hard_limit_bytes", limit(b.memlock_hard)},
		{"cap_ipc_lock", b.cap_ipc_lock},
		{"vm_pin_kb_before", b.vm_pin_kb},
		{"vm_pin_kb_after", a.vm_pin_kb},
		{"vm_lck_kb", b.vm_lck_kb}};
}

registration_facts facts_of(const case_telemetry::pending &p, bool pins_visible, const trace_path *trace)
{
	const auto &b = p.before;
	registration_facts f;
	f.err = p.err;
	f.foll_longterm = traits_of(p.call.api).foll_longterm;
	f.page_size = page_size();
	const uint64_t first = p.call.addr / f.page_size * f.page_size;
	const uint64_t end = (p.call.addr + p.call.length + f.page_size - 1) / f.page_size * f.page_size;
	f.length = end - first;
	f.memlock_known = b.memlock_known;
	f.memlock_limit = b.memlock_soft;
	f.cap_ipc_lock = b.cap_ipc_lock;
	f.vm_pin_bytes = b.vm_pin_kb * 1024;
	f.pages = f.length / f.page_size;
	std::set<std::string> where;
	for (const auto &pg : b.pages) {
		if (pg.longterm_pinnable.has_value())
			f.pages_placement_known++;
		if (pg.longterm_pinnable == false) {
			f.pages_not_longterm_pinnable++;
			where.insert(pg.migratetype == "CMA" ? "pageblock MIGRATE_CMA" : "zone " + pg.zone);
		}
		if (!pg.module_pins.empty())
			f.pages_module_pinned++;
		f.pages_maybe_dma_pinned += pg.maybe_dma_pinned;
	}
	f.not_pinnable_where = join(where, ", ");
	f.pins_visible = pins_visible;
	for (const auto &pin : b.module_pins)
		f.module_pins.push_back(pin.value("contract", "?") + " pin #" + std::to_string(pin.value("id", 0)));
	f.mem_available = b.mem_available;
	f.min_free = b.min_free;
	if (trace && trace->from_trace) {
		f.traced = true;
		f.gup_reached = trace->gup_reached;
		f.migration_attempted = trace->migration_attempted;
		f.migrate_failed = trace->migrate_failed;
		f.migrate_succeeded = trace->migrate_succeeded;
		f.gup_errno = trace->gup_errno;
		f.umem_errno = trace->umem_errno;
	}
	return f;
}

std::optional<path_page> first_page(const case_telemetry::snapshot &s)
{
	for (const auto &pg : s.pages)
		if (pg.present && pg.pfn)
			return path_page{pg.pfn, pg.zone, pg.migratetype, pg.longterm_pinnable};
	return std::nullopt;
}

} // namespace

trace_session *run_trace_session(json &doc)
{
	auto &s = session_slot();
	if (!s) {
		s = trace_session::start();
		s->follow(getpid());	// the run and the case processes it forks
	}
	doc["kernel_trace"] = s->describe();
	return s.get();
}

trace_session *current_run_trace_session()
{
	return session_slot().get();
}

void end_run_trace_session(json &doc)
{
	auto &s = session_slot();
	if (!s)
		return;
	s->stop();
	doc["kernel_trace"] = s->describe();
	doc["kernel_trace"]["removed"] = true;
}

case_telemetry::case_telemetry(const pin_module *module)
	: module_(module), trace_(current_run_trace_session()), previous_(current_registration_observer())
{
	current_registration_observer() = this;
}

case_telemetry::~case_telemetry()
{
	if (current_registration_observer() == this)
		current_registration_observer() = previous_;
}

void case_telemetry::next_role(std::string role)
{
	next_role_ = std::move(role);
}

case_telemetry::snapshot case_telemetry::take_snapshot(uintptr_t addr, size_t length, bool full)
{
	// Each /proc read costs a fraction of a millisecond in an emulated
	// guest: after the call, only what changes (VmPin, the pages).
	snapshot s;
	const auto memlock = read_process_memlock(getpid());
	s.memlock_known = memlock.known;
	s.memlock_soft = memlock.soft;
	s.memlock_hard = memlock.hard;
	s.cap_ipc_lock = memlock.cap_ipc_lock;
	s.vm_pin_kb = memlock.vm_pin_kb;
	s.vm_lck_kb = memlock.vm_lck_kb;
	if (full) {
		const auto mem = read_memory_state();
		s.mem_available = mem.mem_available;
		s.min_free = mem.min_free;
	}

	const size_t ps = page_size();
	const uintptr_t first = addr / ps * ps;
	const size_t npages = std::min((addr + length + ps - 1) / ps - first / ps, max_pages_recorded);
	std::vector<pinmatrix_pin_info> pins;
	if (module_ && full && !module_->try_list(pins))
		for (const auto &p : pins)
			if (p.addr < first + npages * ps && first < p.addr + p.npages * ps)
				s.module_pins.push_back({{"id", p.id},
							 {"contract", contract_name(p.contract)},
							 {"address", p.addr},
							 {"pages", p.npages}});
	std::vector<pinmatrix_page> probed;
	if (module_ && !module_->try_probe(first, npages, probed)) {
		s.pages_source = "module probe";
		if (!cma_areas_)
			cma_areas_ = read_cma_areas();
		const auto &areas = *cma_areas_;
		for (size_t i = 0; i < probed.size(); i++) {
			const auto &pg = probed[i];
			page_snapshot p;
			p.address = first + i * ps;
			p.present = pg.flags & PINMATRIX_PAGE_PRESENT;
			p.pfn = pg.pfn;
			p.zone = zone_name(pg.zone);
			p.migratetype = migratetype_name(pg.migratetype);
			p.placement = placement_of(pg);
			p.longterm_pinnable = longterm_pinnable(pg);
			p.maybe_dma_pinned = pg.flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED;
			p.refcount = pg.refcount;
			p.cma_area = cma_area_of(areas, pg);
			for (const auto &pin : pins)
				if (pin.addr <= p.address && p.address < pin.addr + pin.npages * ps)
					p.module_pins.push_back(std::string(contract_name(pin.contract)) + " pin #" +
								std::to_string(pin.id));
			s.pages.push_back(p);
		}
		return s;
	}
	try {
		s.pages_source = "/proc/self/pagemap";
		for (const auto &pg : read_proc_pages(getpid(), first, npages)) {
			page_snapshot p;
			p.address = pg.address;
			p.present = pg.present;
			p.pfn = pg.pfn.value_or(0);
			p.zone = pg.zone;
			p.cma_area = pg.cma_area;
			p.migratetype = pg.cma_area.empty() ? "" : "CMA";
			p.longterm_pinnable = pg.longterm_pinnable;
			p.placement = !pg.cma_area.empty() ? "cma" : pg.zone == "Movable" ? "movable" : pg.zone.empty() ? "" : "ordinary";
			s.pages.push_back(p);
		}
	} catch (const std::exception &e) {
		s.pages_source = std::string("unknown: ") + e.what();
	}
	return s;
}

void case_telemetry::before(const registration_call &call)
{
	pending p;
	p.seq = int(done_.size()) + 1;
	p.call = call;
	p.role = std::exchange(next_role_, "");
	if (p.role.empty()) {
		// The first registration is the case's; a later one on the same
		// range retries it, another range is a helper buffer.
		const pending *same = nullptr;
		for (const auto &d : done_)
			if (d.call.addr == call.addr)
				same = &d;
		if (done_.empty())
			p.role = "the case's registration";
		else if (same && same->err)
			p.role = "again on the same range, after the first pin was released";
		else if (same)
			p.role = "again on the same range";
		else
			p.role = "another buffer (the readback's source)";
	}
	try {
		for (const auto &m : mappings_of(read_maps(getpid()), call.addr, call.length)) {
			p.allocation_class = allocation_class(m);
			p.mapping = hex(m.start) + "-" + hex(m.end) + " " + m.perms + (m.path.empty() ? "" : " " + m.path);
			break;
		}
	} catch (const std::exception &) {
	}
	if (p.allocation_class.empty())
		p.allocation_class = "not mapped";
	p.before = take_snapshot(call.addr, call.length, true);
	open_ = std::move(p);
	if (trace_)
		trace_->mark(registration_marker(open_->seq, true,
						 "api=" + std::string(call.api) + " addr=" + hex(call.addr) +
							 " len=" + std::to_string(call.length)));
}

void case_telemetry::after(const registration_call &call, int err, int64_t latency_ns)
{
	if (!open_)
		return;
	if (trace_)
		trace_->mark(registration_marker(open_->seq, false, "errno=" + std::to_string(err)));
	open_->err = err;
	open_->latency_ns = latency_ns;
	open_->after = take_snapshot(call.addr, call.length, false);
	done_.push_back(std::move(*open_));
	open_.reset();
}

namespace {

const char *no_trace_note(const trace_session *trace)
{
	return trace ? "kernel trace unavailable on this run (see kernel_trace)" : "no kernel trace session in this run";
}

// What reconstruct_path() needs of one registration: its call, its page
// before and after, and the pins the page already had.
path_inputs path_inputs_of(const case_telemetry::pending &p, const trace_session *trace,
			   const std::vector<std::string> &missing)
{
	path_inputs in;
	in.api = p.call.api;
	in.err = p.err;
	in.before = first_page(p.before);
	in.after = first_page(p.after);
	in.kernel_release = trace ? trace->kernel_release() : "";
	in.foll = running_foll_table();
	in.swp_pfn_bits = trace ? trace->swp_pfn_bits() : 0;
	in.missing_roles = missing;
	for (const auto &pin : p.before.module_pins)
		in.existing_pins.push_back("pinmatrix module " + pin.value("contract", std::string("?")) + " pin #" +
					   std::to_string(pin.value("id", 0)));
	if (!p.before.pages.empty()) {
		const auto &pg = p.before.pages.front();
		if (pg.maybe_dma_pinned)
			in.existing_pins.push_back("page flag maybe_dma_pinned");
		if (pg.refcount && !in.existing_pins.empty())
			in.existing_pins.push_back("refcount " + std::to_string(*pg.refcount));
	}
	return in;
}

// The pages before the call, each with its PFN after.
json pages_json(const case_telemetry::pending &p)
{
	json pages = json::array();
	for (size_t i = 0; i < p.before.pages.size(); i++) {
		const auto &b = p.before.pages[i];
		json pg = {{"address", b.address},
			   {"present", b.present},
			   {"pfn", b.pfn},
			   {"zone", b.zone},
			   {"migratetype", b.migratetype},
			   {"placement", b.placement},
			   {"maybe_dma_pinned", b.maybe_dma_pinned},
			   {"module_pins", b.module_pins}};
		if (b.longterm_pinnable)
			pg["longterm_pinnable"] = *b.longterm_pinnable;
		else if (b.present)
			pg["longterm_pinnable"] = nullptr;	// unknown
		if (b.refcount)
			pg["refcount"] = *b.refcount;
		if (!b.cma_area.empty())
			pg["cma_area"] = b.cma_area;
		if (i < p.after.pages.size())
			pg["pfn_after"] = p.after.pages[i].pfn;
		pages.push_back(pg);
	}
	return pages;
}

// One registration's record: the call, memlock, memory, pages, and for a
// failure its stage and class; its kernel path with its raw events.
json registration_json(const case_telemetry::pending &p, const registration_facts &facts, const trace_path &path,
		       const std::vector<trace_event> &evs)
{
	const auto &api = traits_of(p.call.api);
	json r = {{"seq", p.seq},
		  {"role", p.role},
		  {"api", p.call.api},
		  {"device", p.call.device},
		  {"address", p.call.addr},
		  {"length", p.call.length},
		  {"allocation_class", p.allocation_class},
		  {"mapping", p.mapping},
		  {"access", p.call.access},
		  {"access_flags", access_text(p.call.access)},
		  {"foll_longterm_requested", api.foll_longterm},
		  {"foll_longterm_how", api.how},
		  {"errno", p.err},
		  {"errno_name", errno_name(p.err)},
		  {"latency_ns", p.latency_ns},
		  {"memlock", memlock_json(p.before, p.after)},
		  {"memory",
		   {{"mem_available_kb", p.before.mem_available ? json(*p.before.mem_available / 1024) : json(nullptr)},
		    {"min_free_kb", p.before.min_free ? json(*p.before.min_free / 1024) : json(nullptr)}}},
		  {"pages", pages_json(p)},
		  {"pages_total", facts.pages},
		  {"pages_source", p.before.pages_source},
		  {"module_pins", p.before.module_pins}};
	if (p.err) {
		r["failure_stage"] = failure_stage(facts, &path);
		r["classification"] = to_json(classify_failure(facts));
	}
	json t = to_json(path);
	json raw = json::array();
	for (const auto &e : evs)
		if (raw.size() < max_events_recorded)
			raw.push_back(e.raw.substr(e.raw.find_first_not_of(' ')));
	t["events"] = raw;
	r["trace"] = t;
	return r;
}

// The case's trace outside its registrations; a first pin through GUP (the
// module's, io_uring's) there: did it ask for FOLL_LONGTERM, and did that
// migrate the page?
json trace_info_json(const std::vector<trace_event> &events, bool traced, const trace_session *trace,
		     const std::vector<std::string> &missing)
{
	json info = {{"captured", traced}, {"events", events.size()}};
	if (!traced) {
		info["note"] = no_trace_note(trace);
		return info;
	}
	json outside = json::array();
	const auto others = events_outside_registrations(events, getpid());
	for (const auto &e : others)
		if (outside.size() < 50)
			outside.push_back(e.raw.substr(e.raw.find_first_not_of(' ')));
	info["outside_registrations"] = outside;
	if (std::any_of(others.begin(), others.end(), [](const trace_event &e) { return e.name == "pin_user_pages_fast"; })) {
		path_inputs in;
		in.api = "the first pin";
		in.kernel_release = trace->kernel_release();
		in.foll = running_foll_table();
		in.swp_pfn_bits = trace->swp_pfn_bits();
		in.missing_roles = missing;
		for (const auto &e : others)
			if (e.name == "pin_user_pages_fast_ret")
				in.err = return_errno(e).value_or(0);
		info["first_pin_path"] = to_json(reconstruct_path(others, in));
	}
	return info;
}

} // namespace

json case_telemetry::finish()
{
	const bool traced = trace_ && trace_->available();
	const std::string text = traced ? trace_->take() : "";
	// The raw trace of each case, for a bug report or a test fixture.
	if (const char *dir = getenv("PINMATRIX_TRACE_DUMP"); dir && *dir && traced)
		write_text_file(std::string(dir) + "/trace-" + std::to_string(getpid()) + ".txt", text);
	// This process's events (the buffer also holds the run's own).
	std::vector<trace_event> events;
	for (auto &e : parse_trace(text))
		if (e.pid == getpid())
			events.push_back(std::move(e));
	const std::vector<std::string> missing = trace_ ? trace_->missing_roles() : std::vector<std::string>{};
	json records = json::array();
	for (const auto &p : done_) {
		const auto evs = traced ? registration_events(events, p.seq) : std::vector<trace_event>{};
		trace_path path = reconstruct_path(evs, path_inputs_of(p, trace_, missing));
		if (!traced)
			path.notes.push_back(no_trace_note(trace_));
		records.push_back(registration_json(p, facts_of(p, module_ != nullptr, &path), path, evs));
	}
	return {{"registrations", records}, {"kernel_trace", trace_info_json(events, traced, trace_, missing)}};
}

void attach_telemetry(json &observed, const json &observation)
{
	if (!observed.is_object() || !observation.is_object())
		return;
	for (const char *key : {"registrations", "kernel_trace"})
		if (observation.contains(key))
			observed[key] = observation[key];
}

} // namespace pinmatrix

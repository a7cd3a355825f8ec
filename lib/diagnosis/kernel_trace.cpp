// SPDX-License-Identifier: GPL-2.0
#include "kernel_trace.hpp"
#include "sys_error.hpp"
#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

namespace pinmatrix {

using nlohmann::json;

namespace {

std::optional<int64_t> parse_int(std::string_view s, int base)
{
	if (s.empty())
		return std::nullopt;
	std::string t(s);
	errno = 0;
	char *end = nullptr;
	int64_t v;
	if (t[0] == '-')
		v = std::strtoll(t.c_str(), &end, base);
	else
		v = static_cast<int64_t>(std::strtoull(t.c_str(), &end, base));
	if (errno || !end || *end)
		return std::nullopt;
	return v;
}

std::optional<uint64_t> hex_field(const trace_event &e, const std::string &key)
{
	auto v = e.field(key);
	if (!v)
		return std::nullopt;
	std::string_view s = *v;
	if (s.substr(0, 2) == "0x")
		s.remove_prefix(2);
	auto n = parse_int(s, 16);
	if (!n)
		return std::nullopt;
	return static_cast<uint64_t>(*n);
}

std::string plural(int64_t n, const char *one, const char *many)
{
	return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

std::optional<std::string> trace_event::field(const std::string &key) const
{
	auto it = fields.find(key);
	if (it == fields.end())
		return std::nullopt;
	return it->second;
}

std::optional<int64_t> trace_event::number(const std::string &key) const
{
	auto v = field(key);
	if (!v)
		return std::nullopt;
	if (v->rfind("0x", 0) == 0)
		return parse_int(v->substr(2), 16);
	return parse_int(*v, 10);
}

namespace {

bool all_digits(std::string_view s)
{
	return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string_view trim(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
		s.remove_prefix(1);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
		s.remove_suffix(1);
	return s;
}

// A timestamp token "6.872656:".
bool timestamp_token(std::string_view t)
{
	if (t.size() < 4 || t.back() != ':')
		return false;
	t.remove_suffix(1);
	const size_t dot = t.find('.');
	return dot != std::string_view::npos && all_digits(t.substr(0, dot)) && all_digits(t.substr(dot + 1));
}

} // namespace

namespace {

// The CPU column " [000]": where it opens and closes, or nullopt.
std::optional<std::pair<size_t, size_t>> cpu_column(std::string_view s)
{
	for (size_t i = s.find(" ["); i != std::string_view::npos; i = s.find(" [", i + 1)) {
		size_t j = i + 2;
		while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
			j++;
		if (j > i + 2 && j < s.size() && s[j] == ']' && (j + 1 == s.size() || s[j + 1] == ' '))
			return std::pair{i, j};
	}
	return std::nullopt;
}

// "task-pid" left of the CPU column, less the TGID column "(  139)".
std::optional<std::string_view> task_and_pid(std::string_view left)
{
	left = trim(left);
	if (!left.empty() && left.back() == ')') {
		const size_t paren = left.rfind('(');
		if (paren == std::string_view::npos)
			return std::nullopt;
		left = trim(left.substr(0, paren));
	}
	const size_t dash = left.rfind('-');
	if (dash == std::string_view::npos || !all_digits(left.substr(dash + 1)))
		return std::nullopt;
	return left;
}

// After the CPU column: the timestamp (past the flags column, if there is
// one); rest is left at the event's name.
std::optional<std::string_view> timestamp_of(std::string_view &rest)
{
	auto next_token = [&rest]() {
		rest = trim(rest);
		const size_t sp = rest.find(' ');
		std::string_view t = rest.substr(0, sp);
		rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp);
		return t;
	};
	std::string_view ts = next_token();
	if (!timestamp_token(ts))
		ts = next_token();	// that was the flags column
	if (!timestamp_token(ts))
		return std::nullopt;
	rest = trim(rest);
	return ts;
}

// A kprobe's site "(caller <- callee)" or "(func+0x0/0x3f0)"; args is left
// past it. Nested parentheses do not occur in it.
void read_site(trace_event &e, std::string_view &args)
{
	if (args.empty() || args.front() != '(')
		return;
	const size_t close = args.find(')');
	if (close == std::string_view::npos)
		return;
	e.site = std::string(args.substr(1, close - 1));
	args.remove_prefix(close + 1);
	const size_t arrow = e.site.find(" <- ");
	if (arrow != std::string::npos) {
		e.caller = e.site.substr(0, arrow);
		e.callee = e.site.substr(arrow + 4);
	} else {
		e.callee = e.site.substr(0, e.site.find('+'));
	}
}

// key=value words, by hand as well.
void read_fields(trace_event &e, std::string_view args)
{
	std::istringstream words{std::string(args)};
	for (std::string w; words >> w;) {
		const size_t eq = w.find('=');
		if (eq == std::string::npos || eq == 0)
			continue;
		std::string value = w.substr(eq + 1);
		while (!value.empty() && value.back() == ',')
			value.pop_back();
		e.fields[w.substr(0, eq)] = value;
	}
}

} // namespace

std::optional<trace_event> parse_trace_line(std::string_view line)
{
	// "       pinmatrix-139     [000] .....     6.872656: ib_umem_get: (ib_umem_get+0x0/0x3f0) addr=..."
	// The irq/preempt flags column and the TGID column "(  139)" depend on
	// trace options; the task name may hold spaces and dashes. Parsed by
	// hand: std::regex costs milliseconds a line in an emulated guest.
	const std::string_view s = trim(line);
	if (s.empty() || s.front() == '#')
		return std::nullopt;
	const auto cpu = cpu_column(s);
	if (!cpu)
		return std::nullopt;
	const auto [cpu_open, cpu_close] = *cpu;
	const auto left = task_and_pid(s.substr(0, cpu_open));
	if (!left)
		return std::nullopt;
	std::string_view rest = s.substr(cpu_close + 1);
	const auto ts = timestamp_of(rest);
	if (!ts)
		return std::nullopt;
	const size_t colon = rest.find(':');
	if (colon == std::string_view::npos || colon == 0 || rest.substr(0, colon).find(' ') != std::string_view::npos)
		return std::nullopt;

	trace_event e;
	const size_t dash = left->rfind('-');
	e.raw = std::string(s);
	e.task = std::string(left->substr(0, dash));
	e.pid = std::stoi(std::string(left->substr(dash + 1)));
	e.cpu = std::stoi(std::string(s.substr(cpu_open + 2, cpu_close - cpu_open - 2)));
	e.timestamp = std::stod(std::string(ts->substr(0, ts->size() - 1)));
	e.name = std::string(rest.substr(0, colon));
	std::string_view text = rest.substr(colon + 1);
	if (!text.empty() && text.front() == ' ')
		text.remove_prefix(1);
	e.text = std::string(text);
	std::string_view args = e.text;
	read_site(e, args);
	read_fields(e, args);
	return e;
}

std::vector<trace_event> parse_trace(std::string_view text)
{
	std::vector<trace_event> out;
	size_t start = 0;
	while (start < text.size()) {
		size_t end = text.find('\n', start);
		if (end == std::string_view::npos)
			end = text.size();
		if (auto e = parse_trace_line(text.substr(start, end - start)))
			out.push_back(std::move(*e));
		start = end + 1;
	}
	return out;
}

std::string registration_marker(int seq, bool begin, const std::string &detail)
{
	return "pinmatrix: registration " + std::to_string(seq) + (begin ? " begin" : " end") +
	       (detail.empty() ? "" : " " + detail);
}

std::optional<marker> parse_marker(const trace_event &e)
{
	static const std::string prefix = "pinmatrix: registration ";
	if (e.name != "tracing_mark_write" || e.text.rfind(prefix, 0) != 0)
		return std::nullopt;
	std::istringstream in(e.text.substr(prefix.size()));
	marker m;
	std::string what;
	if (!(in >> m.seq >> what) || (what != "begin" && what != "end"))
		return std::nullopt;
	m.begin = what == "begin";
	std::getline(in, m.detail);
	m.detail = std::string(trim(m.detail));
	return m;
}

std::vector<trace_event> registration_events(const std::vector<trace_event> &all, int seq)
{
	std::vector<trace_event> out;
	int pid = -1;
	bool inside = false;
	for (const auto &e : all) {
		if (auto mk = parse_marker(e); mk && mk->seq == seq) {
			if (mk->begin) {
				inside = true;
				pid = e.pid;
				out.clear();
				continue;
			}
			if (inside && e.pid == pid)
				return out;
		}
		if (inside && e.pid == pid && e.name != "tracing_mark_write")
			out.push_back(e);
	}
	return out;	// no end marker: what there is
}

std::vector<trace_event> events_outside_registrations(const std::vector<trace_event> &all, int pid)
{
	std::vector<trace_event> out;
	bool inside = false;
	for (const auto &e : all) {
		if (e.pid != pid)
			continue;
		if (auto mk = parse_marker(e)) {
			inside = mk->begin;
			continue;
		}
		if (!inside && e.name != "tracing_mark_write")
			out.push_back(e);
	}
	return out;
}

std::optional<int> return_errno(const trace_event &e, const std::string &key)
{
	auto v = e.field(key);
	if (!v)
		return std::nullopt;
	int64_t n;
	if (v->rfind("0x", 0) == 0) {
		auto u = parse_int(v->substr(2), 16);
		if (!u)
			return std::nullopt;
		n = *u;	// two's complement: 0xfffffffffffffff4 is -12
	} else {
		auto d = parse_int(*v, 10);
		if (!d)
			return std::nullopt;
		n = *d;
	}
	if (n < 0 && n >= -4095)
		return int(-n);
	return std::nullopt;
}

std::optional<uint64_t> migration_pte_pfn(uint64_t pte, int swp_pfn_bits)
{
	if (swp_pfn_bits <= 0 || swp_pfn_bits > 50)
		return std::nullopt;
	// arch/x86/include/asm/pgtable_64.h: SWP_TYPE_BITS 5, the offset from
	// bit 14 on, inverted (L1TF); the migration entry's young/dirty bits
	// sit above the PFN bits.
	const uint64_t offset = (~pte << 5) >> 14;
	return offset & ((uint64_t(1) << swp_pfn_bits) - 1);
}

uint64_t present_pte_pfn(uint64_t pte)
{
	return (pte & 0x000ffffffffff000ULL) >> 12;
}

std::string trace_path::one_line() const
{
	return join(steps, " / ", [](const path_step &s) { return s.text.substr(0, s.text.find(": ")); });
}

std::string trace_path::text() const
{
	std::string out;
	for (const auto &s : steps)
		out += std::string(size_t(s.depth) * 2, ' ') + s.text + "  [" + s.source + "]\n";
	return out;
}

namespace {

std::string mt_kernel_name(const std::string &mt)
{
	if (mt.empty() || mt == "unknown")
		return "pageblock type unknown";
	std::string up;
	for (char c : mt)
		up += char(std::toupper(static_cast<unsigned char>(c)));
	return "MIGRATE_" + up;
}

// "pageblock = MIGRATE_CMA, zone Normal", "zone = ZONE_MOVABLE, pageblock MIGRATE_MOVABLE".
// ": long-term pinnable", ": not long-term pinnable", ": long-term pinnable unknown"
std::string pinnable_text(const path_page &p)
{
	if (!p.longterm_pinnable)
		return ": long-term pinnable unknown";
	return *p.longterm_pinnable ? ": long-term pinnable" : ": not long-term pinnable";
}

std::string placement_text(const path_page &p, bool after)
{
	const std::string pb = after ? "pageblock(Q)" : "pageblock";
	if (p.migratetype == "CMA")
		return pb + " = MIGRATE_CMA, zone " + p.zone;
	// Without the module (explain) the pageblock's type is not known.
	const std::string block = p.migratetype.empty() || p.migratetype == "unknown"
					  ? ""
					  : ", " + pb + " " + mt_kernel_name(p.migratetype);
	if (p.zone == "Movable")
		return std::string(after ? "zone(Q)" : "zone") + " = ZONE_MOVABLE" + block;
	return std::string(after ? "zone(Q) " : "zone ") + (p.zone.empty() ? "?" : p.zone) + block;
}

const trace_event *first(const std::vector<trace_event> &ev, const char *name)
{
	for (const auto &e : ev)
		if (e.name == name)
			return &e;
	return nullptr;
}

const trace_event *last(const std::vector<trace_event> &ev, const char *name)
{
	const trace_event *out = nullptr;
	for (const auto &e : ev)
		if (e.name == name)
			out = &e;
	return out;
}

std::string callee_or(const trace_event *e, const char *fallback)
{
	return e && !e->callee.empty() ? e->callee.substr(0, e->callee.find('+')) : fallback;
}

} // namespace

namespace {

// The path of one registration, step by step: what each step read of the
// events and the probes, and the lines it adds.
class path_builder {
public:
	path_builder(const std::vector<trace_event> &ev, const path_inputs &in) : ev_(ev), in_(in)
	{
		p_.outcome = in.err ? "-" + errno_symbol(in.err) : "success";
		p_.from_trace = !ev.empty();
	}

	trace_path from_probes();
	trace_path from_trace()
	{
		read_returns();
		request();
		fast_path();
		migration();
		ending();
		return p_;
	}

private:
	void add(int depth, std::string text, const char *source) { p_.steps.push_back({std::move(text), source, depth}); }
	void existing_pins_line(const char *otherwise);
	void read_returns();
	void read_gup_split();
	std::string umem_call() const;
	void request();
	void fast_path();
	void count_migration(int &unmaps);
	void migration();
	void ending();

	const std::vector<trace_event> &ev_;
	const path_inputs &in_;
	trace_path p_;
	const trace_event *umem_ = nullptr, *umem_ret_ = nullptr, *pupf_ = nullptr, *pupf_ret_ = nullptr,
			  *gl_ret_ = nullptr, *provider_ret_ = nullptr;
};

// "source P has an existing pin: ..." (from the module's pins), else
// `otherwise` when given.
void path_builder::existing_pins_line(const char *otherwise)
{
	if (in_.existing_pins.empty()) {
		if (otherwise)
			add(2, otherwise, "module probe");
		return;
	}
	add(2, "source P has an existing pin: " + join(in_.existing_pins, "; "), "module probe");
}

// No trace: where the page was and where it ended, from the probes.
trace_path path_builder::from_probes()
{
	p_.notes.push_back("no kernel trace of this registration: the path is reconstructed from the page "
			   "probes and the errno only");
	add(0, "long-term pin requested: " + in_.api + " -> ib_umem_get -> pin_user_pages_fast(FOLL_LONGTERM) "
	       "(what the API does; not traced)", "telemetry");
	if (in_.before)
		add(1, placement_text(*in_.before, false) + pinnable_text(*in_.before) +
			       (in_.before->longterm_pinnable == true ? ", no migration needed" : ""),
		    "module probe");
	if (in_.before && in_.after && in_.before->pfn != in_.after->pfn) {
		add(1, "migrate " + hex(in_.before->pfn) + " -> " + hex(in_.after->pfn), "module probe");
		add(1, placement_text(*in_.after, true), "module probe");
	} else if (in_.err && in_.before && in_.before->longterm_pinnable == false) {
		existing_pins_line(nullptr);
		add(2, "page not moved", "module probe");
	}
	add(1, in_.err ? p_.outcome + ": errno seen by " + in_.api : "success", "telemetry");
	return p_;
}

// The calls' entries and returns, and the errnos they returned.
void path_builder::read_returns()
{
	umem_ = first(ev_, "ib_umem_get");
	umem_ret_ = last(ev_, "ib_umem_get_ret");
	pupf_ = first(ev_, "pin_user_pages_fast");
	pupf_ret_ = last(ev_, "pin_user_pages_fast_ret");
	gl_ret_ = last(ev_, "gup_longterm_ret");
	provider_ret_ = last(ev_, "provider_reg_mr_ret");
	p_.umem_called = umem_ != nullptr || umem_ret_ != nullptr;
	if (umem_ret_)
		p_.umem_errno = return_errno(*umem_ret_);
	if (provider_ret_)
		p_.provider_errno = return_errno(*provider_ret_);
	if (gl_ret_)
		p_.gup_errno = return_errno(*gl_ret_);
	else if (pupf_ret_)
		p_.gup_errno = return_errno(*pupf_ret_);
	read_gup_split();
}

// The pages of every pin_user_pages_fast call (ib_umem_get asks in chunks)
// and the slow path's share of them: gup_fast_fallback() calls
// __gup_longterm_locked() for exactly the pages GUP-fast did not pin.
void path_builder::read_gup_split()
{
	if (!pupf_ || in_.missing("gup_longterm"))
		return;
	trace_path::gup_split split;
	for (const auto &e : ev_) {
		if (e.name == "pin_user_pages_fast")
			split.requested += e.number("nr_pages").value_or(0);
		else if (e.name == "gup_longterm")
			split.slow_path_pages += e.number("nr_pages").value_or(0);
	}
	if (split.requested > 0 && split.slow_path_pages <= split.requested)
		p_.gup_paths = split;
	else
		p_.notes.push_back("the GUP path is not read: pin_user_pages_fast asked " +
				   std::to_string(split.requested) + " pages and __gup_longterm_locked got " +
				   std::to_string(split.slow_path_pages));
}

// "ib_umem_get(0x7f..., 4096 bytes)", or "" when its entry is not traced.
std::string path_builder::umem_call() const
{
	if (!umem_)
		return "";
	std::string call = "ib_umem_get(";
	if (auto a = hex_field(*umem_, "addr"))
		call += hex(*a);
	if (auto n = umem_->number("size"))
		call += ", " + std::to_string(*n) + " bytes";
	return call + ")";
}

// 1. Did ib_umem_get ask for a long-term pin?
void path_builder::request()
{
	const std::string umem = umem_call();
	const std::string umem_or_name = umem.empty() ? std::string("ib_umem_get") : umem;
	if (pupf_) {
		p_.gup_reached = true;
		std::string flags_text;
		if (auto f = hex_field(*pupf_, "gup_flags")) {
			p_.longterm_flag = in_.foll.longterm(uint32_t(*f));
			auto names = in_.foll.text(uint32_t(*f));
			flags_text = names ? *names : "gup_flags " + hex(*f) + " (not decoded: this kernel's FOLL_* "
								       "values are in neither its BTF nor pinmatrix.ko)";
		}
		std::string call = "pin_user_pages_fast(";
		if (auto n = pupf_->number("nr_pages"))
			call += plural(*n, "page", "pages");
		call += (flags_text.empty() ? "" : ", " + flags_text) + ")";
		// Unknown is said as unknown: never a long-term pin by default.
		const char *requested = !p_.longterm_flag ? "pin requested (FOLL_LONGTERM undecoded)"
				       : *p_.longterm_flag ? "long-term pin requested"
							   : "pin requested WITHOUT FOLL_LONGTERM";
		add(0, std::string(requested) + ": " + (umem.empty() ? "" : umem + " -> ") + call, "trace");
	} else if (p_.umem_called && !in_.missing("pin_user_pages_fast")) {
		p_.gup_reached = false;
		add(0, "no long-term pin requested: " + umem_or_name +
			       " returned before calling pin_user_pages_fast (its memlock check, or a page-sized "
			       "allocation)",
		    "trace");
	} else if (p_.umem_called) {
		add(0, umem_or_name + ": whether it asked for a long-term pin is not traced (no pin_user_pages_fast probe)",
		    "trace");
	} else if (in_.missing("ib_umem_get")) {
		add(0, "ib_umem_get is not traced on this kernel: the path starts later", "trace");
	} else {
		add(0, "ib_umem_get not entered: the registration failed before the kernel pinned anything "
		       "(user space, or uverbs before the umem)",
		    "trace");
	}
	// A pin without FOLL_LONGTERM checks no placement: the incident's first pin.
	if (p_.longterm_flag == false && !first(ev_, "mm_migrate_pages_start") && !first(ev_, "mm_migrate_pages"))
		add(1, "no placement check: without FOLL_LONGTERM the page is pinned where it is", "trace");
}

// 2. Where the page was, and whether the fast path refused it.
void path_builder::fast_path()
{
	std::string split;
	if (const auto &g = p_.gup_paths)
		split = "GUP-fast pinned " + std::to_string(g->gup_fast_pinned()) + " of " +
			plural(g->requested, "page", "pages") + ", the slow path (__gup_longterm_locked) was handed " +
			std::to_string(g->slow_path_pages);
	if (p_.gup_reached != true)
		return;
	if (!in_.before) {
		// No probe of the page: the request's own line says it.
		if (!split.empty() && !p_.steps.empty())
			p_.steps.front().text += " (" + split + ")";
		return;
	}
	int gup_entries = 0;
	for (const auto &e : ev_)
		gup_entries += e.name == "gup_longterm";
	std::string detail = pinnable_text(*in_.before).substr(2);
	if (gup_entries)
		detail += "; the GUP fast path did not pin it (" +
			  callee_or(first(ev_, "gup_longterm"), "__gup_longterm_locked") + " entered)";
	else if (in_.before->longterm_pinnable == true)
		detail += ": pinned on the fast path, no migration";
	if (!split.empty())
		detail += " (" + split + ")";
	add(1, placement_text(*in_.before, false) + ": " + detail, "module probe");
}

// The migration events MR_LONGTERM_PIN asked for: counts, and P and Q from
// the migration entries.
void path_builder::count_migration(int &unmaps)
{
	std::vector<uint64_t> from, to;
	for (const auto &e : ev_) {
		if (e.name == "mm_migrate_pages_start" && e.field("reason") == "longterm_pin")
			p_.migration_attempted = true;
		if (e.name == "mm_migrate_pages" && e.field("reason") == "longterm_pin") {
			p_.migration_attempted = true;
			p_.migrate_succeeded += e.number("nr_succeeded").value_or(0);
			p_.migrate_failed += e.number("nr_failed").value_or(0);
		}
		if (e.name == "set_migration_pte") {
			unmaps++;
			if (auto pte = hex_field(e, "pte"))
				if (auto pfn = migration_pte_pfn(*pte, in_.swp_pfn_bits))
					from.push_back(*pfn);
		}
		if (e.name == "remove_migration_pte")
			if (auto pte = hex_field(e, "pte"))
				to.push_back(present_pte_pfn(*pte));
	}
	if (!from.empty())
		p_.migrated_from = from.front();
	for (uint64_t q : to)
		if (!p_.migrated_from || q != *p_.migrated_from) {
			p_.migrated_to = q;
			break;
		}
}

// 3. The migration, and why it failed or what the retry pinned.
void path_builder::migration()
{
	int unmaps = 0;
	count_migration(unmaps);
	const trace_event *mig_ret = last(ev_, "migrate_pages_ret");
	if (!p_.migration_attempted && !mig_ret)
		return;
	const std::string P = p_.migrated_from ? hex(*p_.migrated_from) : in_.before ? hex(in_.before->pfn) : "P";
	const std::string Q = p_.migrated_to ? hex(*p_.migrated_to)
			      : (p_.migrate_succeeded && in_.after && (!in_.before || in_.after->pfn != in_.before->pfn))
				      ? hex(in_.after->pfn)
				      : "Q";
	const std::string counts = "migrate_pages(MIGRATE_SYNC, longterm_pin): " + std::to_string(p_.migrate_succeeded) +
				   " succeeded, " + std::to_string(p_.migrate_failed) + " failed";
	if (p_.migrated_from && in_.before && *p_.migrated_from != in_.before->pfn)
		p_.notes.push_back("the migration entry's PFN " + P + " differs from the probed PFN " + hex(in_.before->pfn));
	add(1, "migrate " + P + " -> " + Q + ": " + counts, "trace");
	if (p_.migrate_failed || (mig_ret && mig_ret->number("ret").value_or(0) != 0)) {
		existing_pins_line("source P is held by a reference the module does not know (no pin it holds)");
		const std::string how = unmaps ? "P was unmapped and restored " + plural(unmaps, "time", "times")
					       : "P was never unmapped (its references did not add up)";
		add(2, "migration fails: " + std::to_string(p_.migrate_failed) + " of " +
			       std::to_string(p_.migrate_failed + p_.migrate_succeeded) + " not migrated; " + how,
		    "trace");
	} else if (p_.migrate_succeeded) {
		if (gl_ret_ && !p_.gup_errno)
			add(1, "retry GUP: " + callee_or(gl_ret_, "__gup_longterm_locked") + " pinned " +
				       plural(gl_ret_->number("ret").value_or(0), "page", "pages"),
			    "trace");
		if (in_.after)
			add(1, placement_text(*in_.after, true) +
				       (in_.after->longterm_pinnable == false ? ": STILL not long-term pinnable"
									     : pinnable_text(*in_.after)),
			    "module probe");
	}
}

// 4. How it ended: what returned the umem and the MR, or each error.
void path_builder::ending()
{
	std::vector<std::string> returns;
	if (!in_.err) {
		if (umem_ret_)
			returns.push_back("ib_umem_get returned a umem");
		if (provider_ret_)
			returns.push_back(callee_or(provider_ret_, "the driver") + " returned an MR");
		add(1, "success" + (returns.empty() ? "" : ": " + join(returns, ", ")), "trace");
		return;
	}
	for (const trace_event *e : {last(ev_, "longterm_migrate_ret"), last(ev_, "longterm_check_ret"), gl_ret_,
				     pupf_ret_, umem_ret_, provider_ret_})
		if (e)
			if (auto err = return_errno(*e))
				returns.push_back(callee_or(e, e->name.c_str()) + " -" + std::to_string(*err));
	std::string detail = join(returns, ", ");
	if (detail.empty())
		detail = "no traced kernel function returned an error; " + in_.api + " failed with " + errno_symbol(in_.err);
	add(1, p_.outcome + ": " + detail, "trace");
}

} // namespace

trace_path reconstruct_path(const std::vector<trace_event> &ev, const path_inputs &in)
{
	path_builder b(ev, in);
	return ev.empty() ? b.from_probes() : b.from_trace();
}

std::string trace_path::gup_split::decided_by() const
{
	if (!slow_path_pages)
		return "GUP-fast";
	return slow_path_pages == requested ? "the slow path" : "both";
}

json to_json(const trace_path &p)
{
	json steps = json::array(), lines = json::array();
	for (const auto &s : p.steps) {
		steps.push_back({{"text", s.text}, {"source", s.source}, {"depth", s.depth}});
		lines.push_back(std::string(size_t(s.depth) * 2, ' ') + s.text);
	}
	json j = {{"outcome", p.outcome},
		  {"from_trace", p.from_trace},
		  {"one_line", p.one_line()},
		  {"lines", lines},
		  {"steps", steps},
		  {"migration_attempted", p.migration_attempted},
		  {"migrate_succeeded", p.migrate_succeeded},
		  {"migrate_failed", p.migrate_failed}};
	auto opt = [&](const char *key, const auto &v) {
		if (v)
			j[key] = *v;
	};
	opt("umem_called", p.umem_called);
	opt("gup_reached", p.gup_reached);
	opt("foll_longterm", p.longterm_flag);
	opt("gup_errno", p.gup_errno);
	opt("umem_errno", p.umem_errno);
	opt("provider_errno", p.provider_errno);
	opt("migrated_from_pfn", p.migrated_from);
	opt("migrated_to_pfn", p.migrated_to);
	if (const auto &g = p.gup_paths)
		j["gup_paths"] = {{"requested", g->requested},
				  {"gup_fast_pinned", g->gup_fast_pinned()},
				  {"slow_path_pages", g->slow_path_pages},
				  {"decided_by", g->decided_by()}};
	if (!p.notes.empty())
		j["notes"] = p.notes;
	return j;
}

} // namespace pinmatrix

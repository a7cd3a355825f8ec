// SPDX-License-Identifier: GPL-2.0
// Kernel traces read back into the path of section 16.6, from traces a
// guest captured (Debian's 6.1.0-57 under QEMU, ZONE_MOVABLE standing in
// for CMA; tests/data/trace/): case A (the registration migrates the page),
// B (a held FOLL_PIN blocks the migration: -ENOMEM), C (the first pin
// declares FOLL_LONGTERM and migrates) and the memlock case (ib_umem_get
// gives up before pinning).

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kernel_trace.hpp"

using namespace pinmatrix;

namespace {

std::string fixture(const std::string &name)
{
	std::ifstream in(std::string(PINMATRIX_SOURCE_DIR) + "/tests/data/trace/" + name);
	std::ostringstream s;
	s << in.rdbuf();
	EXPECT_FALSE(s.str().empty()) << name;
	return s.str();
}

// What pinmatrix.ko built against 6.1's headers reports (its INFO's foll).
foll_table foll_of_6_1()
{
	return {{{0x1, "FOLL_WRITE"}, {0x4, "FOLL_GET"}, {0x10, "FOLL_FORCE"}, {0x10000, "FOLL_LONGTERM"},
		 {0x40000, "FOLL_PIN"}},
		"pinmatrix.ko (the headers it was built against)"};
}

// The probes' view of the page in each fixture (what the guest recorded).
path_inputs inputs(int err, uint64_t pfn, bool pinned)
{
	path_inputs in;
	in.err = err;
	in.kernel_release = "6.1.0-57-amd64";
	in.foll = foll_of_6_1();
	in.swp_pfn_bits = 34;
	in.before = path_page{pfn, "Movable", "Movable", false};
	if (pinned)
		in.existing_pins = {"pinmatrix module FOLL_PIN pin #1", "page flag maybe_dma_pinned"};
	return in;
}

std::vector<std::string> lines_of(const trace_path &p)
{
	std::vector<std::string> out;
	for (const auto &s : p.steps)
		out.push_back(std::string(size_t(s.depth) * 2, ' ') + s.text);
	return out;
}

bool has_line_starting(const trace_path &p, const std::string &prefix)
{
	for (const auto &s : p.steps)
		if (s.text.rfind(prefix, 0) == 0)
			return true;
	return false;
}

} // namespace

TEST(KernelTrace, ParsesKprobeKretprobeTracepointAndMarkerLines)
{
	auto e = parse_trace_line("       pinmatrix-139     [000] .....     6.872656: ib_umem_get: (ib_umem_get+0x0/0x3f0 "
				  "[ib_uverbs]) addr=0x7f6549ed9000 size=4096 access=0x7");
	ASSERT_TRUE(e);
	EXPECT_EQ(e->task, "pinmatrix");
	EXPECT_EQ(e->pid, 139);
	EXPECT_EQ(e->cpu, 0);
	EXPECT_DOUBLE_EQ(e->timestamp, 6.872656);
	EXPECT_EQ(e->name, "ib_umem_get");
	EXPECT_EQ(e->callee, "ib_umem_get");
	EXPECT_EQ(e->number("addr"), 0x7f6549ed9000);
	EXPECT_EQ(e->number("size"), 4096);

	auto r = parse_trace_line("       pinmatrix-140     [000] .N...     6.982608: ib_umem_get_ret: (rxe_mr_init_user+0x4f/"
				  "0x200 [rdma_rxe] <- ib_umem_get) ret=0xfffffffffffffff4");
	ASSERT_TRUE(r);
	EXPECT_EQ(r->caller, "rxe_mr_init_user+0x4f/0x200 [rdma_rxe]");
	EXPECT_EQ(r->callee, "ib_umem_get");
	EXPECT_EQ(return_errno(*r), 12);

	auto t = parse_trace_line("  kworker/0:1-events-7  (    7) [001] d..1.    12.000001: set_migration_pte: "
				  "addr=7f6549ed9000, pte=efffe7fffbb51802 order=0");
	ASSERT_TRUE(t) << "TGID column and a task name with dashes";
	EXPECT_EQ(t->task, "kworker/0:1-events");
	EXPECT_EQ(t->pid, 7);
	EXPECT_EQ(t->field("addr"), "7f6549ed9000");
	EXPECT_EQ(t->field("pte"), "efffe7fffbb51802");

	auto m = parse_trace_line(" pinmatrix-9 [000] ..... 1.5: tracing_mark_write: pinmatrix: registration 3 end errno=12");
	ASSERT_TRUE(m);
	auto mk = parse_marker(*m);
	ASSERT_TRUE(mk);
	EXPECT_EQ(mk->seq, 3);
	EXPECT_FALSE(mk->begin);
	EXPECT_EQ(mk->detail, "errno=12");
	EXPECT_EQ(registration_marker(3, false, "errno=12"), m->text);

	for (const char *not_event : {"# tracer: nop", "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION", "", "  ",
				      "CPU:0 [LOST 12 EVENTS]"})
		EXPECT_FALSE(parse_trace_line(not_event)) << not_event;
}

TEST(KernelTrace, ReturnValuesPointersAndErrnos)
{
	trace_event e;
	e.fields["ret"] = "0xffff888006621100";	// a struct ib_umem *
	EXPECT_FALSE(return_errno(e));
	e.fields["ret"] = "-12";
	EXPECT_EQ(return_errno(e), 12);
	e.fields["ret"] = "1";				// pages pinned
	EXPECT_FALSE(return_errno(e));
	e.fields["ret"] = "-131391530879408";		// a pointer printed as s64
	EXPECT_FALSE(return_errno(e));
	e.fields["ret"] = "0xfffffffffffffff5";		// -EAGAIN
	EXPECT_EQ(return_errno(e), 11);
}

// A BTF blob as the kernel's: a header, an int, a struct, then the enum of
// FOLL_* (6.12 on), each member a name offset and a value.
std::vector<std::byte> btf_with_foll()
{
	std::vector<uint32_t> types, strings_offsets;
	std::string strings(1, '\0');
	auto str = [&](const std::string &n) {
		const auto off = uint32_t(strings.size());
		strings += n + '\0';
		return off;
	};
	auto type = [&](uint32_t name, uint32_t kind, uint32_t vlen, uint32_t size) {
		types.insert(types.end(), {name, (kind << 24) | vlen, size});
	};
	type(str("int"), 1, 0, 4);
	types.push_back(0x01000020);	// its encoding word
	type(str("page"), 4, 1, 8);
	types.insert(types.end(), {str("flags"), 1, 0});	// one member
	type(0, 6, 3, 4);		// the anonymous enum
	types.insert(types.end(), {str("FOLL_WRITE"), 0x1, str("FOLL_LONGTERM"), 0x100, str("FOLL_PIN"), 0x80000});
	type(str("other"), 19, 1, 8);	// an ENUM64, no FOLL_ member
	types.insert(types.end(), {str("OTHER"), 1, 0});
	const uint32_t hdr = 24, type_len = uint32_t(types.size() * 4);
	std::vector<uint32_t> header = {0x0001eB9F, hdr, 0, type_len, type_len, uint32_t(strings.size())};
	std::vector<std::byte> out(hdr + type_len + strings.size());
	std::memcpy(out.data(), header.data(), hdr);
	std::memcpy(out.data() + hdr, types.data(), type_len);
	std::memcpy(out.data() + hdr + type_len, strings.data(), strings.size());
	return out;
}

// gup_flags by the running kernel's own values: its BTF's enum, or the
// module's, never a version number; nothing known, nothing decoded.
TEST(KernelTrace, FollFlagsByTheKernelsOwnValuesAndMigrationEntryPfns)
{
	const auto module = foll_of_6_1();
	EXPECT_EQ(module.text(0x10001), "FOLL_WRITE|FOLL_LONGTERM");
	EXPECT_EQ(module.text(0x50001), "FOLL_WRITE|FOLL_LONGTERM|FOLL_PIN");
	EXPECT_EQ(module.text(0x200001), "FOLL_WRITE|0x200000") << "a bit it has no name for, in hex";
	EXPECT_EQ(module.longterm(0x10000), true);
	EXPECT_EQ(module.longterm(0x1), false);

	const auto blob = btf_with_foll();
	const foll_table btf = foll_from_btf(blob);
	ASSERT_EQ(btf.bits.size(), 3u);
	EXPECT_EQ(btf.value_of("FOLL_LONGTERM"), 0x100u);
	EXPECT_EQ(btf.text(0x101), "FOLL_WRITE|FOLL_LONGTERM");
	EXPECT_EQ(btf.longterm(0x10000), false) << "6.1's FOLL_LONGTERM is not this kernel's";
	auto cut = blob;
	cut.resize(40);
	EXPECT_THROW(foll_from_btf(cut), std::runtime_error);
	auto wrong = blob;
	wrong[0] = std::byte{0};
	EXPECT_THROW(foll_from_btf(wrong), std::runtime_error);

	const foll_table unknown;
	EXPECT_FALSE(unknown.text(0x10001));
	EXPECT_FALSE(unknown.longterm(0x10001));

	// Case A of the fixture: the module probed PFN 0x22477 before, 0x6b31 after.
	EXPECT_EQ(migration_pte_pfn(0xefffe7fffbb71002ULL, 34), 0x22477u);
	EXPECT_EQ(present_pte_pfn(0x8000000006b31867ULL), 0x6b31u);
	EXPECT_FALSE(migration_pte_pfn(0xefffe7fffbb71002ULL, 0));
}

TEST(KernelTrace, MarkersCutTheTraceIntoRegistrations)
{
	const auto events = parse_trace(fixture("6.1-case-B.txt"));
	const auto first = registration_events(events, 1);
	const auto second = registration_events(events, 2);
	ASSERT_FALSE(first.empty());
	ASSERT_FALSE(second.empty());
	EXPECT_EQ(first.front().name, "ib_umem_get");
	EXPECT_EQ(first.back().name, "provider_reg_mr_ret");
	for (const auto &e : first)
		EXPECT_NE(e.name, "tracing_mark_write");
	EXPECT_TRUE(registration_events(events, 3).empty());
	// The first pin (the module's FOLL_PIN) is outside both.
	const auto outside = events_outside_registrations(events, first.front().pid);
	ASSERT_EQ(outside.size(), 2u);
	EXPECT_EQ(outside[0].field("gup_flags"), "0x1");
}

TEST(KernelTrace, CaseA_LongTermPinMigratesThePageAndSucceeds)
{
	const auto events = registration_events(parse_trace(fixture("6.1-case-A.txt")), 1);
	path_inputs in = inputs(0, 0x22477, false);
	in.after = path_page{0x6b31, "DMA32", "Unmovable", true};
	const auto p = reconstruct_path(events, in);
	EXPECT_TRUE(p.from_trace);
	EXPECT_EQ(p.outcome, "success");
	EXPECT_EQ(p.gup_reached, true);
	EXPECT_EQ(p.longterm_flag, true);
	EXPECT_TRUE(p.migration_attempted);
	EXPECT_EQ(p.migrate_succeeded, 1);
	EXPECT_EQ(p.migrate_failed, 0);
	EXPECT_EQ(p.migrated_from, 0x22477u) << "decoded from set_migration_pte";
	EXPECT_EQ(p.migrated_to, 0x6b31u) << "decoded from remove_migration_pte";
	EXPECT_EQ(p.one_line(), "long-term pin requested / zone = ZONE_MOVABLE, pageblock MIGRATE_MOVABLE / "
				"migrate 0x22477 -> 0x6b31 / retry GUP / zone(Q) DMA32, pageblock(Q) MIGRATE_UNMOVABLE / "
				"success")
		<< p.text();
	EXPECT_TRUE(has_line_starting(p, "long-term pin requested: ib_umem_get(0x7fafaa694000, 4096 bytes) -> "
					 "pin_user_pages_fast(1 page, FOLL_WRITE|FOLL_LONGTERM)"))
		<< p.text();
	EXPECT_TRUE(p.notes.empty()) << p.notes.front();
}

TEST(KernelTrace, CaseB_MigrationFailsOnTheHeldPinAndEndsInENOMEM)
{
	const auto events = registration_events(parse_trace(fixture("6.1-case-B.txt")), 1);
	const auto p = reconstruct_path(events, inputs(ENOMEM, 0x2246e, true));
	EXPECT_EQ(p.outcome, "-ENOMEM");
	EXPECT_EQ(p.migrate_failed, 1);
	EXPECT_EQ(p.migrate_succeeded, 0);
	EXPECT_EQ(p.gup_errno, 12);
	EXPECT_EQ(p.umem_errno, 12);
	EXPECT_EQ(p.provider_errno, 12);
	const auto lines = lines_of(p);
	ASSERT_GE(lines.size(), 5u);
	EXPECT_EQ(lines.back(), "  -ENOMEM: __gup_longterm_locked -12, pin_user_pages_fast -12, ib_umem_get -12, "
				"rxe_reg_user_mr -12")
		<< p.text();
	EXPECT_EQ(p.one_line(), "long-term pin requested / zone = ZONE_MOVABLE, pageblock MIGRATE_MOVABLE / "
				"migrate 0x2246e -> Q / source P has an existing pin / migration fails / -ENOMEM")
		<< p.text();
	EXPECT_TRUE(has_line_starting(p, "source P has an existing pin: pinmatrix module FOLL_PIN pin #1"));
	EXPECT_TRUE(has_line_starting(p, "migration fails: 1 of 1 not migrated; P was never unmapped")) << p.text();
	// The second registration (first pin released) migrates and succeeds.
	const auto again = reconstruct_path(registration_events(parse_trace(fixture("6.1-case-B.txt")), 2),
					    inputs(0, 0x2246e, false));
	EXPECT_EQ(again.outcome, "success");
	EXPECT_EQ(again.migrate_succeeded, 1);
}

TEST(KernelTrace, CaseC_FirstPinDeclaresLongTermAndMigratesSoTheRegistrationDoesNot)
{
	const auto all = parse_trace(fixture("6.1-case-C.txt"));
	const auto reg = registration_events(all, 1);
	path_inputs in = inputs(0, 0x6b33, false);
	in.before = path_page{0x6b33, "DMA32", "Unmovable", true};
	const auto p = reconstruct_path(reg, in);
	EXPECT_EQ(p.outcome, "success");
	EXPECT_FALSE(p.migration_attempted);
	EXPECT_EQ(p.one_line(), "long-term pin requested / zone DMA32, pageblock MIGRATE_UNMOVABLE / success");

	path_inputs first;
	first.api = "the first pin";
	first.kernel_release = "6.1.0-57-amd64";
	first.foll = foll_of_6_1();
	first.swp_pfn_bits = 34;
	const auto fp = reconstruct_path(events_outside_registrations(all, reg.front().pid), first);
	EXPECT_EQ(fp.longterm_flag, true);
	EXPECT_EQ(fp.migrate_succeeded, 1);
	EXPECT_EQ(fp.migrated_to, 0x6b33u);
	EXPECT_EQ(fp.outcome, "success");
}

// Which GUP path took the pages: pin_user_pages_fast asked for them all,
// and __gup_longterm_locked was handed those GUP-fast did not pin (issue
// 40 part 3); unknown where that probe could not be placed.
TEST(KernelTrace, TheTraceSaysWhichGupPathTookThePages)
{
	const auto events = registration_events(parse_trace(fixture("6.1-case-A.txt")), 1);
	path_inputs in = inputs(0, 0x22477, false);
	auto p = reconstruct_path(events, in);
	ASSERT_TRUE(p.gup_paths.has_value()) << p.text();
	EXPECT_EQ(p.gup_paths->requested, 1);
	EXPECT_EQ(p.gup_paths->slow_path_pages, 1);
	EXPECT_EQ(p.gup_paths->gup_fast_pinned(), 0);
	EXPECT_EQ(p.gup_paths->decided_by(), "the slow path");
	EXPECT_NE(p.text().find("GUP-fast pinned 0 of 1 page, the slow path (__gup_longterm_locked) was handed 1"),
		  std::string::npos)
		<< p.text();
	EXPECT_EQ(to_json(p)["gup_paths"]["decided_by"], "the slow path");
	// Without the slow path's entry, GUP-fast pinned them all.
	std::vector<trace_event> fast_only;
	for (const auto &e : events)
		if (e.name != "gup_longterm")
			fast_only.push_back(e);
	p = reconstruct_path(fast_only, in);
	ASSERT_TRUE(p.gup_paths.has_value());
	EXPECT_EQ(p.gup_paths->decided_by(), "GUP-fast");
	// Unless this kernel could not have shown it.
	in.missing_roles = {"gup_longterm", "gup_longterm_ret"};
	p = reconstruct_path(fast_only, in);
	EXPECT_FALSE(p.gup_paths.has_value());
	EXPECT_FALSE(to_json(p).contains("gup_paths"));
}

TEST(KernelTrace, MemlockQuotaFailsBeforeAnyPinIsRequested)
{
	const auto events = registration_events(parse_trace(fixture("6.1-memlock-quota.txt")), 1);
	const auto p = reconstruct_path(events, inputs(ENOMEM, 0x22400, false));
	EXPECT_EQ(p.gup_reached, false);
	EXPECT_EQ(p.umem_errno, 12);
	EXPECT_FALSE(p.migration_attempted);
	EXPECT_EQ(p.one_line(), "no long-term pin requested / -ENOMEM") << p.text();
	EXPECT_EQ(lines_of(p).back(), "  -ENOMEM: ib_umem_get -12, rxe_reg_user_mr -12");
}

TEST(KernelTrace, AMissingProbeIsNotReadAsAnAbsentCall)
{
	// The same memlock trace on a kernel where pin_user_pages_fast could
	// not be probed: nothing may be concluded from its absence.
	const auto events = registration_events(parse_trace(fixture("6.1-memlock-quota.txt")), 1);
	path_inputs in = inputs(ENOMEM, 0x22400, false);
	in.missing_roles = {"pin_user_pages_fast", "pin_user_pages_fast_ret"};
	const auto p = reconstruct_path(events, in);
	EXPECT_FALSE(p.gup_reached.has_value());
	EXPECT_FALSE(has_line_starting(p, "no long-term pin requested")) << p.text();

	// Without an ib_umem_get probe an empty path says so rather than "not entered".
	in.missing_roles = {"ib_umem_get", "ib_umem_get_ret"};
	std::vector<trace_event> only_migration;
	for (const auto &e : parse_trace(fixture("6.1-case-B.txt")))
		if (e.name == "mm_migrate_pages")
			only_migration.push_back(e);
	const auto q = reconstruct_path(only_migration, in);
	EXPECT_FALSE(has_line_starting(q, "ib_umem_get not entered")) << q.text();
	EXPECT_EQ(q.migrate_failed, 1);
}

TEST(KernelTrace, WithoutATraceThePathComesFromTheProbesAndSaysSo)
{
	path_inputs in = inputs(0, 0x22477, false);
	in.after = path_page{0x6b31, "DMA32", "Unmovable", true};
	const auto p = reconstruct_path({}, in);
	EXPECT_FALSE(p.from_trace);
	EXPECT_FALSE(p.notes.empty());
	EXPECT_NE(p.one_line().find("migrate 0x22477 -> 0x6b31"), std::string::npos) << p.text();
	EXPECT_EQ(p.outcome, "success");
	for (const auto &s : p.steps)
		EXPECT_NE(s.source, "trace") << s.text;

	const auto failed = reconstruct_path({}, inputs(ENOMEM, 0x2246e, true));
	EXPECT_EQ(failed.outcome, "-ENOMEM");
	EXPECT_EQ(failed.steps.back().text.rfind("-ENOMEM", 0), 0u) << failed.text();
}

TEST(KernelTrace, CaseB_TheFirstPinAskedForNoPlacementCheck)
{
	const auto all = parse_trace(fixture("6.1-case-B.txt"));
	path_inputs first;
	first.api = "the first pin";
	first.kernel_release = "6.1.0-57-amd64";
	first.foll = foll_of_6_1();
	const auto fp = reconstruct_path(events_outside_registrations(all, all.front().pid), first);
	EXPECT_EQ(fp.longterm_flag, false);
	EXPECT_FALSE(fp.migration_attempted);
	EXPECT_EQ(fp.one_line(), "pin requested WITHOUT FOLL_LONGTERM / no placement check / success") << fp.text();

	// Where this kernel's FOLL_* values are unknown, the module's short-term
	// first pin is not called long-term: undecoded, said so.
	first.foll = {};
	const auto undecoded = reconstruct_path(events_outside_registrations(all, all.front().pid), first);
	EXPECT_FALSE(undecoded.longterm_flag.has_value());
	EXPECT_EQ(undecoded.one_line().rfind("pin requested (FOLL_LONGTERM undecoded)", 0), 0u)
		<< undecoded.text();
	EXPECT_NE(undecoded.text().find("not decoded: this kernel's FOLL_* values are in neither its BTF nor "
					"pinmatrix.ko"), std::string::npos) << undecoded.text();
}

// SPDX-License-Identifier: GPL-2.0
// The whole matrix in a real guest: Debian's stock kernel under QEMU, the
// real rdma_rxe driver and libibverbs, and the project's module. Then the
// runner's promises when the guest misbehaves: a panic, a case that never
// returns (in user space or stuck in the kernel), a guest that never ends,
// a QEMU killed from outside, a results disk that fills up.

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"
#include "vm_records.hpp"

using nlohmann::json;
using pinmatrix::test::case_by_id;
using pinmatrix::test::run_pinmatrix;
namespace fs = std::filesystem;

namespace {

void require_vm()
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root (the guest runs the module)";
	if (system("command -v qemu-system-x86_64 >/dev/null"))
		GTEST_SKIP() << "qemu-system-x86_64 is not installed";
}

fs::path out_dir(const std::string &name)
{
	fs::path p = fs::path(PINMATRIX_TEST_OUT) / name;
	fs::remove_all(p);
	return p;
}

json load(const fs::path &dir)
{
	std::ifstream in(dir / "results.json");
	return json::parse(in);
}


} // namespace

class VmMatrix : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (geteuid() != 0 || system("command -v qemu-system-x86_64 >/dev/null"))
			return;
		dir_ = out_dir("matrix");
		// A 100-column terminal (TableFitsOneHundredColumns).
		setenv("COLUMNS", "100", 1);
		run_ = run_pinmatrix("vm --out " + dir_.string());
		unsetenv("COLUMNS");
		if (fs::exists(dir_ / "results.json"))
			doc_ = load(dir_);
	}
	void SetUp() override
	{
		require_vm();
		ASSERT_TRUE(doc_.is_object()) << run_.output;
	}
	static inline fs::path dir_;
	static inline pinmatrix::test::command_result run_;
	static inline json doc_;
};

// Stock 6.1's one known bug the plan hits: a long-term pin of a 2 MiB
// hugetlb page in ZONE_MOVABLE WARNs in follow_hugetlb_page() and fails
// with ENOMEM (matrix/known_bugs.cpp; tests/vm/vm_backing_test.cpp). It is
// an expected failure, its WARN the evidence, and the run exits 0; every
// other case passes.
static bool known_bug_of_61(const json &c)
{
	return c["id"] == "backing/hugetlb-2m" && c["verdict"] == "xfail" &&
	       c.value("known_bug", json::object()).value("id", "") == "hugetlb-longterm-warn";
}

TEST_F(VmMatrix, EveryPlannedCasePassesOnceButTheKnownBug)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	EXPECT_EQ(doc_["schema"], "pinmatrix/1");
	EXPECT_EQ(doc_["verdict"], "xfail");
	EXPECT_EQ(doc_["summary"]["xfail"], 1);
	ASSERT_EQ(doc_["plan"].size(), doc_["cases"].size());
	for (size_t i = 0; i < doc_["plan"].size(); i++) {
		const auto &c = doc_["cases"][i];
		EXPECT_EQ(c["id"], doc_["plan"][i]);
		if (c["id"] == "backing/hugetlb-2m") {
			EXPECT_TRUE(known_bug_of_61(c)) << c.dump(2);
			continue;
		}
		// No restricted memory of the kind: the 1 GiB page needs hugetlb_cma.
		if (c["id"] == "backing/hugetlb-1g-cma") {
			EXPECT_EQ(c["verdict"], "skip") << c["id"];
			continue;
		}
		// The movable boot's page cache is in ZONE_MOVABLE: GUP-fast's own
		// file rule is out of reach (the ordinary boot gives the row).
		if (c["id"] == "backing/file-shared-writable-in-place") {
			EXPECT_EQ(c["verdict"], "skip") << c["id"];
			EXPECT_NE(c.value("reason", "").find("restricted memory before the pin"), std::string::npos)
				<< c.value("reason", "");
			continue;
		}
		// Stock 6.1 has none of the other long-term pinners but VFIO (no
		// udmabuf, no ODP in rxe, ...): each SKIPs with its reason
		// (tests/vm/vm_pinner_test.cpp); VFIO type1 runs on QEMU's edu.
		if (c["suite"] == "pinner" && c["id"] != "pinner/vfio-type1") {
			EXPECT_EQ(c["verdict"], "skip") << c["id"];
			EXPECT_FALSE(c.value("reason", "").empty()) << c["id"];
			continue;
		}
		EXPECT_EQ(c["verdict"], "pass") << c["id"] << ": " << c.value("reason", "");
		if (c["suite"] == "pin") {
			EXPECT_GT(c["latency_ns"].get<int64_t>(), 0) << c["id"];
		}
	}
	// Every suite ran: the pin matrix, UALink against the reference model,
	// and the registrations that fail for other reasons (memlock).
	std::set<std::string> suites;
	for (const auto &c : doc_["cases"])
		suites.insert(c["suite"]);
	EXPECT_EQ(suites, (std::set<std::string>{"pin", "ualink", "registration", "fork", "race", "backing", "pinner"}));
}

// The default run's table at $COLUMNS=100: the header, one row per case
// starting with its verdict, the reasons below; no line wider than 100.
TEST_F(VmMatrix, TableFitsOneHundredColumns)
{
	std::istringstream out(run_.output);
	std::string line;
	while (std::getline(out, line) && line.rfind("verdict ", 0) != 0)
		;
	ASSERT_EQ(line.rfind("verdict ", 0), 0u) << "no table in:\n" << run_.output;
	size_t rows = 0, lines = 1;
	bool known_bugs = false;	// the section after the reasons
	while (std::getline(out, line) && line.rfind("pinmatrix vm:", 0) != 0) {
		EXPECT_LE(line.size(), 100u) << line;
		lines++;
		known_bugs |= line == "known kernel bugs:";
		if (line.rfind(" ", 0) != 0 && !known_bugs) {
			rows++;
			const std::string verdict = line.substr(0, line.find(' '));
			EXPECT_TRUE(verdict == "PASS" || verdict == "FAIL" || verdict == "XFAIL" || verdict == "XPASS" ||
				    verdict == "SKIP" || verdict == "ERROR")
				<< line;
		}
	}
	EXPECT_EQ(rows, doc_["cases"].size()) << run_.output;
	EXPECT_GT(lines, rows);	// the reasons, below the rows
	// 6.1's known bug, with its fix, below the reasons.
	EXPECT_TRUE(known_bugs) << run_.output;
	EXPECT_NE(run_.output.find("  hugetlb-longterm-warn: "), std::string::npos) << run_.output;
}

// While the guest ran, each case's line as the guest finished it (read
// from its results.json), before the table.
TEST_F(VmMatrix, EachCaseIsShownAsTheGuestFinishesIt)
{
	const std::string n = std::to_string(doc_["plan"].size());
	const size_t first = run_.output.find("  [1/" + n + "] A: PASS\n");
	EXPECT_NE(first, std::string::npos) << run_.output;
	EXPECT_LT(first, run_.output.find("\nverdict ")) << run_.output;
	EXPECT_NE(run_.output.find("  [" + n + "/" + n + "] "), std::string::npos) << run_.output;
}

TEST_F(VmMatrix, RecordsKernelAndBootParameters)
{
	EXPECT_NE(doc_["kernel"]["release"].get<std::string>().find("amd64"), std::string::npos);
	EXPECT_NE(doc_["kernel"]["cmdline"].get<std::string>().find("movablecore="), std::string::npos);
	// A starved TCG vCPU is no kernel bug: the guest's stall detectors are
	// at their longest, as the kernel itself reports them.
	EXPECT_EQ(doc_["kernel"]["stall_detectors"]["rcu_cpu_stall_timeout_s"], 300) << doc_["kernel"].dump();
	EXPECT_EQ(doc_["kernel"]["stall_detectors"]["watchdog_thresh_s"], 60) << doc_["kernel"].dump();
	EXPECT_EQ(doc_["rdma_device"], "rxe0");
	EXPECT_EQ(doc_["module"]["migratetype_method"], "pageblock-bitmap");
}

TEST_F(VmMatrix, ObservedAgreesWithExpectedInTheRecord)
{
	for (const auto &c : doc_["cases"]) {
		if (c["suite"] != "pin")
			continue;
		const auto &e = c["expected"], &o = c["observed"];
		ASSERT_TRUE(o.is_object()) << c["id"];
		EXPECT_EQ(o["errno"], e["errno"]) << c["id"];
		EXPECT_EQ(o["migrated_by_first_pin"], e["first_pin_migrates"]) << c["id"];
		EXPECT_EQ(o["migrated_by_registration"], e["registration_migrates"]) << c["id"];
		EXPECT_EQ(o["pfn_before"], o["page"]["before"]["pfn"]) << c["id"];
		EXPECT_EQ(o["page"]["before"]["placement"], c["placement"]) << c["id"];
	}
}

// The four edges of section 16.5, read from the evidence itself.
TEST_F(VmMatrix, CaseA_RegistrationMovedThePageOutOfZoneMovable)
{
	const auto &o = case_by_id(doc_, "A")["observed"];
	EXPECT_EQ(o["page"]["before"]["zone"], "Movable");
	EXPECT_NE(o["page"]["after_registration"]["zone"], "Movable");
	EXPECT_NE(o["pfn_before"], o["pfn_after"]);
	EXPECT_TRUE(o["migrated_by_registration"].get<bool>());
	EXPECT_TRUE(o["rdma_write_readback"].get<bool>()) << o.value("rdma_detail", "");
}

TEST_F(VmMatrix, CaseB_RegistrationFailedWithENOMEMAndRecovered)
{
	const auto &o = case_by_id(doc_, "B")["observed"];
	EXPECT_EQ(o["errno"], 12);
	EXPECT_EQ(o["page"]["after_registration"]["zone"], "Movable");
	EXPECT_TRUE(o["page"]["after_first_pin"]["maybe_dma_pinned"].get<bool>());
	EXPECT_TRUE(o["content_intact"].get<bool>());
	EXPECT_EQ(o["recovery"]["errno"], 0);
}

// Latency as a distribution (issue 17 part 5): each pin case that reached
// its registration timed it 5 times (run's --latency-samples default), its
// own first, the repeats on fresh pages ending as it did.
TEST_F(VmMatrix, PinCasesTimeTheirRegistrationFiveTimes)
{
	size_t seen = 0;
	for (const auto &c : doc_["cases"]) {
		if (c.value("suite", "") != "pin" || c["verdict"] != "pass")
			continue;
		const auto &o = c["observed"];
		ASSERT_TRUE(o.contains("latency_samples_ns")) << c["id"] << ": " << o.dump();
		const auto &samples = o["latency_samples_ns"];
		const size_t otherwise = o.value("latency_repeats_otherwise", json::array()).size();
		EXPECT_EQ(samples.size() + otherwise, 5u) << c["id"];
		EXPECT_EQ(samples.at(0), o["latency_ns"]) << c["id"];
		for (const auto &ns : samples)
			EXPECT_GT(ns.get<int64_t>(), 0) << c["id"];
		seen++;
	}
	EXPECT_GE(seen, 4u);	// A-D at least
}

// The harm (lib/give_back.hpp): the ZONE_MOVABLE block that held the page,
// offlined. A's registration moved the page out, so the block goes with the
// registration held; B's first pin strands the page, so it does not until
// that pin is released: the refusal shown by failed migrations, before the
// bound.
TEST_F(VmMatrix, CaseA_MemoryGoesBackWithTheRegistrationHeld)
{
	const auto &c = case_by_id(doc_, "A");
	const auto &g = c["observed"]["give_back"]["with_pins_held"];
	EXPECT_EQ(g["given_back"], true) << g.dump();
	EXPECT_EQ(c["expected"]["memory_given_back_while_held"], true);
}

TEST_F(VmMatrix, CaseB_MemoryGoesBackOnlyOnceTheFirstPinIsReleased)
{
	const auto &c = case_by_id(doc_, "B");
	const auto &g = c["observed"]["give_back"];
	EXPECT_EQ(g["with_pins_held"]["given_back"], false) << g.dump();
	EXPECT_NE(g["with_pins_held"]["detail"].get<std::string>().find("failed migrations"), std::string::npos)
		<< g.dump();
	EXPECT_EQ(g["first_pin_released"]["given_back"], true) << g.dump();
	EXPECT_EQ(c["expected"]["memory_given_back_while_held"], false);
}

TEST_F(VmMatrix, CaseC_FirstPinMovedThePage)
{
	const auto &o = case_by_id(doc_, "C")["observed"];
	EXPECT_EQ(o["page"]["before"]["zone"], "Movable");
	EXPECT_NE(o["page"]["after_first_pin"]["zone"], "Movable");
	EXPECT_TRUE(o["migrated_by_first_pin"].get<bool>());
	EXPECT_FALSE(o["migrated_by_registration"].get<bool>());
	EXPECT_EQ(o["errno"], 0);
}

TEST_F(VmMatrix, CaseD_OrdinaryPageStaysAndRegisters)
{
	const auto &o = case_by_id(doc_, "D")["observed"];
	EXPECT_NE(o["page"]["before"]["zone"], "Movable");
	EXPECT_FALSE(o["migrated"].get<bool>());
	EXPECT_EQ(o["errno"], 0);
}

TEST_F(VmMatrix, EveryPinWasReleased)
{
	const auto &v = doc_["vmstat_after"];
	EXPECT_GT(v["nr_foll_pin_acquired"].get<uint64_t>(), 0u);
	EXPECT_EQ(v["nr_foll_pin_acquired"], v["nr_foll_pin_released"]);
}

// Registration telemetry and kernel traces (section 17 and 16.6), read from
// the same run's records.
namespace {

const json &registration(const json &c, size_t i = 0)
{
	const auto &regs = c.at("observed").at("registrations");
	if (regs.size() <= i)
		throw std::runtime_error(c["id"].get<std::string>() + ": no registration " + std::to_string(i + 1));
	return regs[i];
}

std::string hex(uint64_t v)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
	return buf;
}

std::string trimmed(std::string s)
{
	return s.substr(std::min(s.size(), s.find_first_not_of(' ')));
}

} // namespace

TEST_F(VmMatrix, KernelTraceWasSetUpThroughTracefsAndRemoved)
{
	const auto &kt = doc_["kernel_trace"];
	EXPECT_TRUE(kt["available"].get<bool>()) << kt.dump(2);
	EXPECT_TRUE(kt["removed"].get<bool>());
	EXPECT_NE(kt["instance"].get<std::string>().find("/instances/pinmatrix-"), std::string::npos);
	std::set<std::string> placed;
	for (const auto &p : kt["probes"])
		if (p["placed"].get<bool>())
			placed.insert(p["role"]);
		else
			EXPECT_NE(p["note"].get<std::string>().find("skipped"), std::string::npos) << p.dump();
	for (const char *role : {"ib_umem_get", "ib_umem_get_ret", "pin_user_pages_fast", "gup_longterm_ret", "migrate_pages_ret"})
		EXPECT_TRUE(placed.count(role)) << role << ": " << kt.dump(2);
	EXPECT_EQ(kt["tracepoints"].size(), 4u) << kt.dump(2);
	EXPECT_FALSE(kt.contains("notes")) << kt.dump(2);
}

TEST_F(VmMatrix, EveryRegistrationHasATelemetryRecord)
{
	for (const auto &c : doc_["cases"]) {
		// The suites whose registrations carry telemetry (case_telemetry.hpp).
		if (c["suite"] != "pin" && c["suite"] != "registration")
			continue;
		const auto &regs = c["observed"]["registrations"];
		ASSERT_FALSE(regs.empty()) << c["id"];
		for (const auto &r : regs) {
			EXPECT_EQ(r["api"], "ibv_reg_mr") << c["id"];
			EXPECT_EQ(r["allocation_class"], "host anonymous") << c["id"];
			EXPECT_TRUE(r["foll_longterm_requested"].get<bool>()) << c["id"];
			EXPECT_GT(r["length"].get<uint64_t>(), 0u) << c["id"];
			EXPECT_TRUE(r["memlock"].contains("vm_pin_kb_before")) << c["id"];
			EXPECT_FALSE(r["pages"].empty()) << c["id"];
			EXPECT_TRUE(r["trace"]["from_trace"].get<bool>()) << c["id"] << " " << r["seq"];
			EXPECT_EQ(r["trace"]["outcome"], r["errno"] == 0 ? "success" : "-" + r["errno_name"].get<std::string>().substr(0, r["errno_name"].get<std::string>().find(' ')))
				<< c["id"];
			EXPECT_EQ(r.contains("classification"), r["errno"] != 0) << c["id"];
		}
	}
}

TEST_F(VmMatrix, CaseB_TracePathEndsInENOMEMAndTelemetrySaysPlacementBlockedByThePin)
{
	const auto &c = case_by_id(doc_, "B");
	const auto &r = registration(c);
	EXPECT_EQ(r["errno"], 12);
	EXPECT_EQ(r["classification"]["class"], "long-term placement blocked by an existing pin")
		<< r["classification"].dump(2);
	EXPECT_NE(r["failure_stage"].get<std::string>().find("migration"), std::string::npos) << r["failure_stage"];
	// The pin that blocked it, with its contract, on the page.
	EXPECT_EQ(r["module_pins"][0]["contract"], "FOLL_PIN");
	EXPECT_EQ(r["pages"][0]["module_pins"][0].get<std::string>().rfind("FOLL_PIN pin #", 0), 0u);
	EXPECT_TRUE(r["pages"][0]["maybe_dma_pinned"].get<bool>());
	EXPECT_EQ(r["pages"][0]["zone"], "Movable");
	// The kernel's own account: MR_LONGTERM_PIN migration failed, -ENOMEM.
	const auto &t = r["trace"];
	EXPECT_EQ(t["outcome"], "-ENOMEM");
	EXPECT_EQ(trimmed(t["lines"].back()).rfind("-ENOMEM", 0), 0u) << t["lines"].dump(2);
	EXPECT_EQ(t["one_line"].get<std::string>().rfind("long-term pin requested / ", 0), 0u) << t["one_line"];
	EXPECT_NE(t["one_line"].get<std::string>().find("/ migration fails / -ENOMEM"), std::string::npos) << t["one_line"];
	EXPECT_EQ(t["migrate_failed"], 1);
	EXPECT_EQ(t["gup_errno"], 12);
	// The first pin asked for no placement check.
	EXPECT_EQ(c["observed"]["kernel_trace"]["first_pin_path"]["foll_longterm"], false);
	// And once it is released, the same registration migrates and succeeds.
	EXPECT_EQ(registration(c, 1)["trace"]["outcome"], "success");
	EXPECT_EQ(registration(c, 1)["trace"]["migrate_succeeded"], 1);
}

TEST_F(VmMatrix, CaseA_TraceShowsTheMigration)
{
	const auto &c = case_by_id(doc_, "A");
	const auto &t = registration(c)["trace"];
	EXPECT_EQ(t["outcome"], "success");
	EXPECT_TRUE(t["migration_attempted"].get<bool>());
	EXPECT_EQ(t["migrate_succeeded"], 1);
	EXPECT_EQ(t["migrate_failed"], 0);
	// P and Q from the migration entries agree with the module's probes.
	const uint64_t P = c["observed"]["pfn_before"], Q = c["observed"]["pfn_after"];
	EXPECT_EQ(t["migrated_from_pfn"], P);
	EXPECT_EQ(t["migrated_to_pfn"], Q);
	EXPECT_NE(t["one_line"].get<std::string>().find("/ migrate " + hex(P) + " -> " + hex(Q) + " / "), std::string::npos)
		<< t["one_line"];
	EXPECT_EQ(trimmed(t["lines"].back()).rfind("success", 0), 0u) << t["lines"].dump(2);
}

TEST_F(VmMatrix, MemlockQuotaIsClassifiedAsTheQuotaNotPlacement)
{
	const auto &c = case_by_id(doc_, "registration/memlock-quota");
	EXPECT_EQ(c["verdict"], "pass") << c.value("reason", "");
	const auto &r = registration(c);
	EXPECT_EQ(r["errno"], 12);
	EXPECT_EQ(r["classification"]["class"], "memlock quota") << r["classification"].dump(2);
	EXPECT_LT(r["memlock"]["limit_bytes"].get<uint64_t>(), 4096u);
	EXPECT_GT(r["memlock"]["limit_bytes"].get<uint64_t>(), 0u);
	EXPECT_FALSE(r["memlock"]["cap_ipc_lock"].get<bool>());
	EXPECT_EQ(r["trace"]["gup_reached"], false);
	EXPECT_EQ(r["trace"]["outcome"], "-ENOMEM");
	// The limit restored, the same page registers.
	EXPECT_EQ(registration(c, 1)["errno"], 0);
	// A zero limit is EPERM, which is not called an ENOMEM.
	const auto &zero = registration(case_by_id(doc_, "registration/memlock-zero"));
	EXPECT_EQ(zero["errno"], 1);
	EXPECT_EQ(zero["classification"]["class"], "not ENOMEM");
}

// Case B without CAP_IPC_LOCK under a memlock limit (tests/vm/memlock-b-guest.sh).
// 1.5 pages: the module's short-term first pin is not charged (no kernel
// pinner of that kind charges), so the registration's page fits and its
// ENOMEM is the blocked migration's: B passes for that reason. Half a page:
// ib_umem_get()'s memlock check refuses before any migration, and B says it
// decided nothing (ERROR, the memlock quota named), never a PASS.
TEST(VmMemlock, CaseBUnderAMemlockLimitIsToldApartFromAFailedMigration)
{
	require_vm();
	const auto dir = out_dir("memlock-b");
	const auto r = run_pinmatrix("vm --out " + dir.string() + " --guest-cmd 'bash " PINMATRIX_SOURCE_DIR
				     "/tests/vm/memlock-b-guest.sh " PINMATRIX_BIN " /run/pinmatrix/memlock-b'");
	ASSERT_EQ(r.exit_code, 0) << r.output;
	const fs::path out = dir / "guest" / "memlock-b";
	const json fits = case_by_id(load(out / "fits"), "B");
	EXPECT_EQ(fits["verdict"], "pass") << fits.value("reason", "");
	EXPECT_EQ(registration(fits)["classification"]["class"], "long-term placement blocked by an existing pin")
		<< registration(fits)["classification"].dump(2);
	EXPECT_FALSE(registration(fits)["memlock"]["cap_ipc_lock"].get<bool>());
	const json tight = case_by_id(load(out / "tight"), "B");
	EXPECT_EQ(tight["verdict"], "error");
	const std::string reason = tight.value("reason", "");
	EXPECT_NE(reason.find("the registration's ENOMEM is the memlock quota's"), std::string::npos) << reason;
	EXPECT_NE(reason.find("the case decided nothing"), std::string::npos) << reason;
}

// `pinmatrix explain` in a guest on processes started there, as a wrapper,
// and the trace's cleanup (tests/vm/explain-guest.sh).
class VmExplain : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (geteuid() != 0 || system("command -v qemu-system-x86_64 >/dev/null"))
			return;
		dir_ = out_dir("explain");
		const std::string cmd = "bash " + std::string(PINMATRIX_SOURCE_DIR) + "/tests/vm/explain-guest.sh " +
					std::string(PINMATRIX_BIN);
		run_ = run_pinmatrix("vm --out " + dir_.string() + " --guest-cmd '" + cmd + "'");
	}
	void SetUp() override
	{
		require_vm();
		ASSERT_EQ(run_.exit_code, 0) << run_.output;
	}
	static std::string file(const std::string &name)
	{
		std::ifstream in(dir_ / "guest" / "explain" / name);
		std::ostringstream s;
		s << in.rdbuf();
		return s.str();
	}
	static json json_file(const std::string &name)
	{
		const std::string text = file(name);
		try {
			return json::parse(text);
		} catch (const std::exception &e) {
			ADD_FAILURE() << name << ": " << e.what() << "\n" << text << "\n" << file(name.substr(0, name.find('.')) + ".err");
			return json::object();
		}
	}
	static inline fs::path dir_;
	static inline pinmatrix::test::command_result run_;
};

TEST_F(VmExplain, SmallMemlockLimitWithoutCapIpcLockMeansTheQuota)
{
	EXPECT_EQ(file("memlock.rc"), "0\n") << file("memlock.txt");
	const std::string text = file("memlock.txt");
	EXPECT_NE(text.find("RLIMIT_MEMLOCK 1 KiB (hard 1 KiB)"), std::string::npos) << text;
	EXPECT_NE(text.find("CAP_IPC_LOCK no"), std::string::npos) << text;
	EXPECT_NE(text.find("allocation class  host stack"), std::string::npos) << text;
	EXPECT_NE(text.find("would most likely mean: memlock quota"), std::string::npos) << text;
	const json j = json_file("memlock.json");
	EXPECT_EQ(j["classification"]["class"], "memlock quota");
	EXPECT_EQ(j["memlock"]["limit_bytes"], 1024);
	// Root in the guest: PFNs and zones are visible without the module.
	bool zone = false;
	for (const auto &p : j["pages"])
		zone |= p.contains("zone") && p.contains("pfn");
	EXPECT_TRUE(zone) << j["pages"].dump();
}

TEST_F(VmExplain, PagesInZoneMovableMeanPlacementWhenMemlockIsNoLimit)
{
	const json j = json_file("plain.json");
	EXPECT_EQ(j["memlock"]["cap_ipc_lock"], true);
	size_t movable = 0;
	for (const auto &p : j["pages"])
		movable += p.value("zone", "") == "Movable";
	// With movablecore= a process's anonymous pages come from ZONE_MOVABLE.
	ASSERT_GT(movable, 0u) << j["pages"].dump();
	EXPECT_EQ(j["classification"]["class"], "long-term placement blocked by an existing pin") << j.dump(2);
	EXPECT_EQ(j["classification"]["rule"], "placement-blocked-by-unseen-pin");
}

TEST_F(VmExplain, BadPidAndRangeExitTwo)
{
	EXPECT_EQ(file("badpid.rc"), "2\n");
	EXPECT_NE(file("badpid.txt").find("no such process"), std::string::npos) << file("badpid.txt");
	EXPECT_EQ(file("badrange.rc"), "2\n");
	EXPECT_NE(file("badrange.txt").find("is not mapped"), std::string::npos) << file("badrange.txt");
}

TEST_F(VmExplain, WrapperExplainsTheCommandsFailedRegistration)
{
	// ibv_rc_pingpong fails on "Couldn't register MR" and exits 1; explain
	// passes its status on.
	EXPECT_EQ(file("wrapper.rc"), "1\n") << file("wrapper.txt");
	const std::string text = file("wrapper.txt");
	EXPECT_NE(text.find("Couldn't register MR"), std::string::npos) << text;
	EXPECT_NE(text.find("failed: 1"), std::string::npos) << text;
	EXPECT_NE(text.find("(ibv_rc_pingpong)"), std::string::npos) << text;
	EXPECT_NE(text.find("what it most likely means: memlock quota"), std::string::npos) << text;
	const json j = json_file("wrapper.json");
	EXPECT_EQ(j["exit_code"], 1);
	ASSERT_EQ(j["failed"].size(), 1u) << j.dump(2);
	const auto &f = j["failed"][0];
	EXPECT_EQ(f["errno"], 12);
	EXPECT_EQ(f["classification"]["class"], "memlock quota");
	EXPECT_EQ(f["trace"]["gup_reached"], false);
	EXPECT_EQ(f["trace"]["outcome"], "-ENOMEM");
}

TEST_F(VmExplain, WrapperAroundCaseBSeesPlacementBlockedByAPinItCannotSee)
{
	EXPECT_EQ(file("wrapper-b.rc"), "0\n") << file("wrapper-b.err");
	const json j = json_file("wrapper-b.json");
	ASSERT_EQ(j["failed"].size(), 1u) << j.dump(2);
	const auto &f = j["failed"][0];
	EXPECT_EQ(f["errno"], 12);
	EXPECT_EQ(f["classification"]["class"], "long-term placement blocked by an existing pin") << f.dump(2);
	EXPECT_EQ(f["classification"]["rule"], "placement-blocked-by-unseen-pin");
	EXPECT_EQ(f["trace"]["migrate_failed"], 1);
	EXPECT_EQ(f["trace"]["outcome"], "-ENOMEM");
	EXPECT_NE(f["failure_stage"].get<std::string>().find("migration"), std::string::npos);
	// Decided by the kernel's own account, whatever explain could still read
	// of the page (on a one-CPU guest it runs after the case moved on).
	EXPECT_NE(f["classification"]["facts"].dump().find("migrate_pages(MR_LONGTERM_PIN) moved 0, failed 1"),
		  std::string::npos)
		<< f["classification"].dump(2);
}

TEST_F(VmExplain, NoProbeOrInstanceIsLeftBehind)
{
	// After a run that also found a killed run's leftovers...
	EXPECT_EQ(file("run.rc"), "0\n") << file("run.txt");
	EXPECT_EQ(file("after-run.txt"), "0 0 ") << "kprobe lines, instances\n" << file("run.txt");
	const json doc = json_file("run/results.json");
	const auto removed = doc["kernel_trace"]["removed_leftovers"].dump();
	EXPECT_NE(removed.find("instance pinmatrix-999999"), std::string::npos) << removed;
	EXPECT_NE(removed.find("probe pinmatrix_999999/leftover"), std::string::npos) << removed;
	// ... and after a SIGTERM in the middle of one ...
	EXPECT_NE(file("during-run.txt"), "0\n") << "the probes were in place when the signal came\n" << file("term.txt");
	EXPECT_EQ(file("term.rc"), "143\n") << file("term.txt");
	EXPECT_EQ(file("after-term.txt"), "0 0 ") << file("term.txt");
	// ... also one that came while the run held a file of its instance
	// open (strace kept it in that open() for 2 s).
	EXPECT_EQ(file("held-open.txt"), "held\n") << file("term-held.txt");
	EXPECT_EQ(file("term-held.rc"), "143\n") << file("term-held.txt");
	EXPECT_EQ(file("after-term-held.txt"), "0 0 ") << "kprobe lines, instances\n" << file("term-held.txt");
}

TEST(VmFaults, GuestPanicIsAnErrorAndKeepsWhatFinished)
{
	require_vm();
	auto dir = out_dir("panic");
	auto r = run_pinmatrix("vm --cases A,B,D --fault panic-at=B --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(doc["verdict"], "error");
	EXPECT_EQ(case_by_id(doc, "A")["verdict"], "pass");
	for (const char *id : {"B", "D"}) {
		EXPECT_EQ(case_by_id(doc, id)["verdict"], "error") << id;
		EXPECT_NE(case_by_id(doc, id)["reason"].get<std::string>().find("no result from the guest"),
			  std::string::npos);
	}
	EXPECT_NE(doc["vm"]["serial_excerpt"].get<std::string>().find("Kernel panic"), std::string::npos)
		<< doc["vm"]["serial_excerpt"];
	EXPECT_TRUE(fs::exists(dir / "serial.log"));
	// B was running: its record names it and carries the panic's task dump.
	const auto &b = case_by_id(doc, "B");
	EXPECT_NE(b["reason"].get<std::string>().find("case B was running when the guest ended"), std::string::npos)
		<< b["reason"];
	EXPECT_NE(b["serial_excerpt"].get<std::string>().find("sysrq_handle_crash"), std::string::npos)
		<< b["serial_excerpt"];
	EXPECT_NE(case_by_id(doc, "D")["reason"].get<std::string>().find("not reached"), std::string::npos);
	// Marked for readers that map it (report --kcidb: MISS), the running one not.
	EXPECT_TRUE(case_by_id(doc, "D").value("not_reached", false));
	EXPECT_FALSE(b.contains("not_reached"));
	EXPECT_TRUE(case_by_id(doc, "A").contains("started_at"));
}

// A kernel that ends before the guest's job starts (here it cannot mount a
// root: no initramfs init) is booted once more, as a TCG boot that oopsed
// in sched_clock_cpu is; the first boot's console is kept and named, and
// a second death is the run's error.
TEST(VmFaults, AKernelThatEndsBeforeTheJobIsBootedOnceMoreAndKept)
{
	require_vm();
	auto dir = out_dir("boot-dies");
	auto r = run_pinmatrix("vm --cases A --append rdinit=/nonexistent --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	EXPECT_NE(r.output.find("the guest's kernel ended before its job started ([ "), std::string::npos)
		<< r.output;
	auto doc = load(dir);
	ASSERT_EQ(doc["vm"]["boot_retries"].size(), 1u) << doc["vm"].dump();
	const json &retry = doc["vm"]["boot_retries"][0];
	EXPECT_EQ(retry["serial_log"], "serial-boot-1.log");
	EXPECT_NE(retry["console_alarm"].get<std::string>().find("Kernel panic"), std::string::npos) << retry;
	EXPECT_TRUE(fs::exists(dir / "serial-boot-1.log"));
	EXPECT_TRUE(fs::exists(dir / "serial.log"));
	EXPECT_EQ(case_by_id(doc, "A")["verdict"], "error");
	EXPECT_NE(case_by_id(doc, "A")["reason"].get<std::string>().find("on both boots"), std::string::npos)
		<< case_by_id(doc, "A")["reason"];
}

// A CMA area the kernel could not reserve (cma=64G in a 1 GiB guest: "cma:
// Failed to reserve"): the cases that need it SKIP with the reason instead
// of filling memory in search of it until the OOM killer ends the run.
TEST(VmFaults, CmaTheKernelFailedToReserveIsASkipNotAnOomKill)
{
	require_vm();
	auto dir = out_dir("cma-unreserved");
	auto r = run_pinmatrix("vm --kernel debian:7.2 --boot cma --append cma=64G --cases A,D --out " +
			       dir.string());
	EXPECT_EQ(r.exit_code, 0) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(case_by_id(doc, "A")["verdict"], "skip");
	EXPECT_NE(case_by_id(doc, "A")["reason"].get<std::string>().find("no CMA area (CmaTotal 0"), std::string::npos)
		<< case_by_id(doc, "A")["reason"];
	EXPECT_EQ(case_by_id(doc, "D")["verdict"], "pass");
}

// A boot the kernel cannot offer (Debian's bookworm 6.12 has no CONFIG_CMA):
// no guest starts, every case is a SKIP with the reason, exit 4 ("cannot
// run here"), and the summary line is printed (it read the VM's phases,
// which a run that never booted has none of, and threw).
TEST(VmFaults, BootTheKernelLacksIsCannotRunHere)
{
	require_vm();
	auto dir = out_dir("boot-lacking");
	auto r = run_pinmatrix("vm --kernel debian:6.12+deb12 --boot hugetlb_cma --cases A --out " + dir.string());
	EXPECT_EQ(r.exit_code, 4) << r.output;
	EXPECT_NE(r.output.find("cannot run here: hugetlb_cma: CONFIG_CMA is not set"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("pinmatrix vm: skip in "), std::string::npos) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(case_by_id(doc, "A")["verdict"], "skip");
}

TEST(VmFaults, CaseThatNeverReturnsIsKilledAndTheRestRun)
{
	require_vm();
	auto dir = out_dir("hang");
	auto r = run_pinmatrix("vm --cases B,C --fault hang-at=B --case-timeout 5 --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(case_by_id(doc, "B")["verdict"], "error");
	EXPECT_NE(case_by_id(doc, "B")["reason"].get<std::string>().find("did not finish within 5 s"),
		  std::string::npos);
	EXPECT_EQ(case_by_id(doc, "C")["verdict"], "pass");
}

TEST(VmFaults, GuestThatNeverEndsIsKilledAtTheTimeout)
{
	require_vm();
	auto dir = out_dir("timeout");
	auto r = run_pinmatrix("vm --cases A --timeout 2 --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(case_by_id(doc, "A")["verdict"], "error");
	EXPECT_NE(case_by_id(doc, "A")["reason"].get<std::string>().find("killed"), std::string::npos);
	EXPECT_EQ(doc["vm"]["qemu_exit"], "killed");
}

// A guest still running at its timeout (here case B never returns and its
// case timeout is longer) is asked, before QEMU is killed, for its blocked
// tasks, CPU backtraces and all tasks: Alt+SysRq through QEMU's monitor
// (QMP), which needs nothing of the guest but its keyboard interrupt.
TEST(VmFaults, GuestPastItsTimeoutIsAskedForItsTaskDumpsBeforeTheKill)
{
	require_vm();
	auto dir = out_dir("wedged");
	auto r = run_pinmatrix("vm --cases B --fault hang-at=B --case-timeout 3000 --timeout 25 --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	const auto &dump = doc["vm"]["wedged_guest_dump"];
	EXPECT_EQ(dump["answered"], true) << dump.dump(2);
	EXPECT_NE(doc["vm"]["ended"].get<std::string>().find("after its task and CPU dumps"), std::string::npos)
		<< doc["vm"].dump(2);
	std::ifstream in(dir / "serial.log");
	const std::string serial((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	for (const char *want : {"sysrq: Show Blocked State", "sysrq: Show backtrace of all active CPUs",
				 "sysrq: Show State", "task:pinmatrix"})
		EXPECT_NE(serial.find(want), std::string::npos) << want << " not in serial.log";
	EXPECT_EQ(case_by_id(doc, "B")["verdict"], "error");
}

// A registration that never returns, inside the kernel: the module's PIN
// sleeps (killable) at case B until SIGKILL (pinmatrix.ko's
// stall_pin_until_killed, set by the runner for B only).
TEST(VmFaults, CaseStuckInTheKernelIsDumpedKilledAndTheRestRun)
{
	require_vm();
	auto dir = out_dir("kernel-hang");
	auto r = run_pinmatrix("vm --cases B,C,D --fault kernel-hang-at=B --case-timeout 6 --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	const auto &b = case_by_id(doc, "B");
	EXPECT_EQ(b["verdict"], "error");
	const std::string reason = b["reason"];
	EXPECT_NE(reason.find("did not finish within 6 s"), std::string::npos) << reason;
	EXPECT_NE(reason.find("stuck in the kernel at pm_stall_until_killed"), std::string::npos) << reason;
	// The evidence: where it slept, its kernel stack and the kernel's task dump.
	const auto &stuck = b["stuck_task"];
	EXPECT_EQ(stuck["state"], "D") << stuck.dump(2);
	EXPECT_EQ(stuck["wchan"], "pm_stall_until_killed") << stuck.dump(2);
	EXPECT_NE(stuck["kernel_stack"].dump().find("pm_stall_until_killed"), std::string::npos) << stuck.dump(2);
	EXPECT_NE(stuck["kernel_stack"].dump().find("pm_ioctl"), std::string::npos) << stuck.dump(2);
	const auto &dump = stuck["task_dump"]["lines"];
	ASSERT_FALSE(dump.empty()) << stuck.dump(2);
	EXPECT_EQ(dump[0].get<std::string>().rfind("task:pinmatrix", 0), 0u) << dump.dump(2);
	EXPECT_NE(dump.dump().find(" pid:" + std::to_string(stuck["pid"].get<int>()) + " "), std::string::npos)
		<< dump.dump(2);
	EXPECT_NE(dump.dump().find("pm_stall_until_killed"), std::string::npos) << dump.dump(2);
	// SIGKILL ended the sleep and released what the pin held; the knob
	// was off again for the next cases.
	const auto &after_kill = stuck["vmstat_after_kill"];
	EXPECT_EQ(after_kill["nr_foll_pin_acquired"], after_kill["nr_foll_pin_released"]) << stuck.dump(2);
	EXPECT_EQ(case_by_id(doc, "C")["verdict"], "pass") << case_by_id(doc, "C").value("reason", "");
	EXPECT_EQ(case_by_id(doc, "D")["verdict"], "pass") << case_by_id(doc, "D").value("reason", "");
	EXPECT_EQ(doc["vmstat_after"]["nr_foll_pin_acquired"], doc["vmstat_after"]["nr_foll_pin_released"]);
	EXPECT_TRUE(doc["complete"].get<bool>());
}

// A case stuck in the kernel in a thread of its own (as a race case's
// pinners are) while its main thread waits for it in a futex: the reason
// and the evidence name that thread and its kernel stack, not the main one.
TEST(VmFaults, CaseStuckInAThreadNamesThatThreadAndItsStack)
{
	require_vm();
	auto dir = out_dir("kernel-hang-thread");
	auto r = run_pinmatrix("vm --cases B --fault kernel-hang-in-thread-at=B --case-timeout 6 --out " +
			       dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	const auto &b = case_by_id(doc, "B");
	EXPECT_EQ(b["verdict"], "error");
	const auto &stuck = b["stuck_task"];
	const int pid = stuck["pid"], tid = stuck["tid"];
	EXPECT_NE(tid, pid) << stuck.dump(2);
	const std::string reason = b["reason"];
	EXPECT_NE(reason.find("thread " + std::to_string(tid) + " (of 2) stuck in the kernel at pm_stall_until_killed"),
		  std::string::npos) << reason;
	EXPECT_EQ(stuck["state"], "D") << stuck.dump(2);
	EXPECT_NE(stuck["kernel_stack"].dump().find("pm_stall_until_killed"), std::string::npos) << stuck.dump(2);
	EXPECT_NE(stuck["task_dump"]["lines"].dump().find(" pid:" + std::to_string(tid) + " "), std::string::npos)
		<< stuck.dump(2);
	// Every thread is there: the main one waiting for the other.
	ASSERT_EQ(stuck["threads"].size(), 2u) << stuck.dump(2);
	EXPECT_EQ(stuck["threads"][0]["tid"], pid);
	EXPECT_NE(stuck["threads"][0]["kernel_stack"].dump().find("futex"), std::string::npos) << stuck.dump(2);
	EXPECT_EQ(stuck["threads"][1]["tid"], tid);
	EXPECT_NE(stuck["threads"][1]["kernel_stack"].dump().find("pm_stall_until_killed"), std::string::npos);
}

// An oops with a lock held, as a driver bug makes one (pinmatrix.ko's
// oops_in_pin at case B: a read through a poisoned list pointer while
// pm_oops_lock is held): B's record names the oops. C's pin then waits on
// the lock B's task died holding, uninterruptibly: at its timeout it is
// killed, still there 10 s later and left running, and its reason names
// B's oops; the pin suite's later cases are not run (they would wait on the
// same), and the next suite's case runs.
TEST(VmFaults, OopsWithALockHeldIsNamedAndTheRunGoesOn)
{
	require_vm();
	auto dir = out_dir("kernel-oops");
	auto r = run_pinmatrix("vm --cases A,B,C,D,fork/child-writes-private --fault kernel-oops-at=B "
			       "--case-timeout 8 --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_TRUE(doc["complete"].get<bool>()) << r.output;
	EXPECT_EQ(case_by_id(doc, "A")["verdict"], "pass");
	const auto &b = case_by_id(doc, "B");
	EXPECT_EQ(b["verdict"], "error");
	const std::string b_reason = b["reason"];
	EXPECT_NE(b_reason.find("the kernel reported a bug during the case: "), std::string::npos) << b_reason;
	EXPECT_NE(b_reason.find("general protection fault"), std::string::npos) << b_reason;
	const auto &c = case_by_id(doc, "C");
	EXPECT_EQ(c["verdict"], "error");
	const std::string c_reason = c["reason"];
	for (const char *want : {"did not finish within 8 s", "still there 10 s after SIGKILL (state D", "left running",
				 "the kernel reported a bug earlier, during case B: "})
		EXPECT_NE(c_reason.find(want), std::string::npos) << want << " not in: " << c_reason;
	EXPECT_EQ(c["earlier_kernel_bug"]["case"], "B") << c.dump(2);
	const auto &d = case_by_id(doc, "D");
	EXPECT_EQ(d["verdict"], "error");
	EXPECT_NE(d["reason"].get<std::string>().find("not run: the process of case C is stuck in the kernel"),
		  std::string::npos)
		<< d["reason"];
	EXPECT_EQ(case_by_id(doc, "fork/child-writes-private")["verdict"], "pass")
		<< case_by_id(doc, "fork/child-writes-private").value("reason", "");
}

// A registration that never returns and never sleeps: the module's PIN
// spins, runnable, at case B, under a kretprobe on the spinning function
// as a long-term GUP loop would spin under the suite's own kretprobes
// (tests/vm/spinning-task.sh). The runner does not unwind it from another
// task: with one vCPU that made the kernel warn (rethook_find_ret_addr,
// kernel/trace/rethook.c:263 on 6.1) and the case report a kernel bug of
// its own making. A thread that ran only in the kernel to the end of the
// case's time is a system call that never returns: the kernel failed the
// case (a FAIL, not an ERROR that decided nothing). Returns case B's record.
json spinning_case(unsigned cpus)
{
	auto dir = out_dir("kernel-spin-" + std::to_string(cpus));
	auto r = run_pinmatrix("vm --cpus " + std::to_string(cpus) + " --out " + dir.string() +
			       " --guest-cmd 'bash " PINMATRIX_SOURCE_DIR "/tests/vm/spinning-task.sh " PINMATRIX_BIN
			       " /run/pinmatrix/spin'");
	EXPECT_EQ(r.exit_code, 1) << r.output;
	json b = case_by_id(load(dir / "guest" / "spin"), "B");
	EXPECT_EQ(b["verdict"], "fail");
	const std::string reason = b["reason"];
	EXPECT_NE(reason.find("did not finish within 6 s (a system call that never returns: its thread runs in the "
			      "kernel)"),
		  std::string::npos)
		<< reason;
	EXPECT_EQ(reason.find("the kernel reported a bug"), std::string::npos) << reason;
	EXPECT_FALSE(b.contains("kernel_alarms")) << b.dump(2);
	const auto &stuck = b["stuck_task"];
	EXPECT_EQ(stuck["state"], "R") << stuck.dump(2);
	EXPECT_TRUE(stuck["kernel_stack"].empty()) << stuck.dump(2);
	EXPECT_GT(stuck["cpu_time"]["system_ms"], 0) << stuck.dump(2);
	EXPECT_EQ(stuck["cpu_time"]["user_ms"], 0) << stuck.dump(2);
	// SIGKILL ended the spin and released what the pin held.
	const auto &after_kill = stuck["vmstat_after_kill"];
	EXPECT_EQ(after_kill["nr_foll_pin_acquired"], after_kill["nr_foll_pin_released"]) << stuck.dump(2);
	return b;
}

// With a second CPU, the one that runs it unwinds itself (sysrq 'l').
TEST(VmFaults, CaseSpinningInTheKernelIsNamedFromItsOwnCpu)
{
	require_vm();
	const json b = spinning_case(2);
	EXPECT_NE(b.value("reason", "").find("running, spinning at pm_spin_until_killed"), std::string::npos)
		<< b.value("reason", "");
	const auto &stuck = b["stuck_task"];
	const std::string trace = stuck["cpu_backtrace"]["lines"].dump();
	EXPECT_NE(trace.find("PID: " + std::to_string(stuck["pid"].get<int>()) + " "), std::string::npos)
		<< stuck.dump(2);
	EXPECT_NE(trace.find("pm_spin_until_killed"), std::string::npos) << stuck.dump(2);
}

// With one, the runner holds the CPU at the dump: where it spins is
// unknown, said so, and no kernel warning of the runner's own making.
TEST(VmFaults, CaseSpinningOnTheOnlyCpuIsUnknownNotAWarningOfOurOwn)
{
	require_vm();
	const json b = spinning_case(1);
	EXPECT_NE(b.value("reason", "").find("running, where is unknown"), std::string::npos) << b.value("reason", "");
	EXPECT_TRUE(b["stuck_task"]["cpu_backtrace"].contains("note")) << b["stuck_task"].dump(2);
}

TEST(VmFaults, KernelHangAtACaseWithoutAModulePinIsBadUsage)
{
	auto dir = out_dir("kernel-hang-bad");
	auto r = run_pinmatrix("vm --cases A --fault kernel-hang-at=A --out " + dir.string());
	EXPECT_EQ(r.exit_code, 2) << r.output;
	EXPECT_NE(r.output.find("case A takes no pin through /dev/pinmatrix"), std::string::npos) << r.output;
	EXPECT_FALSE(fs::exists(dir)) << "nothing is written for bad usage";
}

namespace {

// The guest's results.json as far as it is written, or null.
json guest_results(const fs::path &dir)
{
	try {
		return load(dir / "guest");
	} catch (const std::exception &) {
		return nullptr;
	}
}

// QEMU's PID from the pid file the launcher has it write, once that names
// a QEMU of this run: only that process is ever signalled.
pid_t qemu_pid_of(const fs::path &dir)
{
	std::ifstream in(dir / "qemu.pid");
	pid_t pid = 0;
	if (!(in >> pid) || pid <= 0)
		return 0;
	std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
	std::string argv((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
	const bool ours = argv.rfind("qemu-system-x86_64", 0) == 0 &&
			  argv.find((dir / "serial.log").string()) != std::string::npos;
	return ours ? pid : 0;
}

} // namespace

TEST(VmFaults, KilledQemuIsAnErrorNamingTheRunningCaseAndKeepsWhatFinished)
{
	require_vm();
	auto dir = out_dir("qemu-killed");
	// B never returns, so it is surely the case running when QEMU dies.
	auto run = std::async(std::launch::async, [&] {
		return run_pinmatrix("vm --cases A,B,D --fault hang-at=B --case-timeout 600 --out " + dir.string());
	});
	pid_t pid = 0;
	for (int i = 0; i < 3000 && !pid; i++) {
		const json g = guest_results(dir);
		if (g.is_object() && !g["cases"].empty())
			pid = qemu_pid_of(dir);
		if (!pid)
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	ASSERT_GT(pid, 0) << "no result for case A, or no QEMU pid file";
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	auto r = run.get();

	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(doc["verdict"], "error");
	EXPECT_EQ(case_by_id(doc, "A")["verdict"], "pass") << case_by_id(doc, "A").value("reason", "");
	const auto &b = case_by_id(doc, "B");
	EXPECT_EQ(b["verdict"], "error");
	EXPECT_NE(b["reason"].get<std::string>().find("case B was running when the guest ended: QEMU was killed by signal 9"),
		  std::string::npos)
		<< b["reason"];
	EXPECT_FALSE(b["serial_excerpt"].get<std::string>().empty());
	const auto &d = case_by_id(doc, "D");
	EXPECT_EQ(d["verdict"], "error");
	EXPECT_NE(d["reason"].get<std::string>().find("not reached"), std::string::npos) << d["reason"];
	EXPECT_EQ(doc["vm"]["qemu_exit"], 128 + SIGKILL);
	EXPECT_FALSE(doc["vm"]["serial_excerpt"].get<std::string>().empty());
	for (const char *f : {"serial.log", "report.html", "results.ktap", "junit.xml", "summary.md"})
		EXPECT_TRUE(fs::exists(dir / f)) << f;
	EXPECT_FALSE(fs::exists(dir / "qemu.pid")) << "a stale pid file could name another process";
}

namespace {

// A tmpfs of the test's own under its out dir, unmounted at the end.
class small_tmpfs {
public:
	explicit small_tmpfs(fs::path at) : at_(std::move(at))
	{
		fs::create_directories(at_);
		mounted_ = mount("tmpfs", at_.c_str(), "tmpfs", 0, "size=8m,mode=0755") == 0;
	}
	small_tmpfs(const small_tmpfs &) = delete;
	small_tmpfs &operator=(const small_tmpfs &) = delete;
	~small_tmpfs()
	{
		if (mounted_ && umount(at_.c_str()))
			umount2(at_.c_str(), MNT_DETACH);
	}
	bool mounted() const { return mounted_; }
	// Shrinks it to what it holds now plus `spare` bytes: the disk is full.
	bool fill_leaving(uint64_t spare)
	{
		struct statvfs st {};
		if (statvfs(at_.c_str(), &st))
			return false;
		const uint64_t used = uint64_t(st.f_blocks - st.f_bfree) * st.f_frsize;
		const std::string opts = "size=" + std::to_string(used + spare);
		return mount("tmpfs", at_.c_str(), "tmpfs", MS_REMOUNT, opts.c_str()) == 0;
	}

private:
	fs::path at_;
	bool mounted_ = false;
};

} // namespace

// The results disk fills up while case B runs (B hangs to give the test its
// moment): B's record cannot be written. The error names B; results.json
// keeps A, whole (it is only ever replaced by rename); no temporary file is
// left; the run exits 1.
TEST(VmFaults, FullResultsDiskNamesTheCaseAndKeepsWhatWasWritten)
{
	require_vm();
	auto dir = out_dir("full-disk");
	small_tmpfs disk(dir / "mnt");
	ASSERT_TRUE(disk.mounted()) << strerror(errno);
	const fs::path out = dir / "mnt" / "run";
	auto run = std::async(std::launch::async, [&] {
		return run_pinmatrix("vm --cases A,B,D --fault hang-at=B --case-timeout 10 --out " + out.string());
	});
	bool a_written = false;
	for (int i = 0; i < 3000 && !a_written; i++) {
		const json g = guest_results(out);
		a_written = g.is_object() && !g["cases"].empty();
		if (!a_written)
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	// Room for the console and job logs, not for results.json with B (~34 KiB).
	const bool full = a_written && disk.fill_leaving(16 << 10);
	auto r = run.get();
	std::ofstream(dir / "output.txt") << r.output; // the disk itself goes at the end
	ASSERT_TRUE(a_written) << r.output;
	ASSERT_TRUE(full) << strerror(errno);

	EXPECT_EQ(r.exit_code, 1) << r.output;
	// The runner's error names B, and so does B's record in what is shown.
	const std::string error = "pinmatrix: ERROR: case B (2/3): its record: results.json not updated: write "
				  "/run/pinmatrix/results.json: No space left on device; it keeps the 1 case(s) written "
				  "before";
	EXPECT_NE(r.output.find(error + "\n"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("B: error: no result from the guest: " + error), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("pinmatrix vm: ERROR: results not written"), std::string::npos) << r.output;
	const json g = guest_results(out);
	ASSERT_TRUE(g.is_object()) << "the guest's results.json is not whole JSON";
	ASSERT_EQ(g["cases"].size(), 1u) << g["cases"].dump();
	EXPECT_EQ(g["cases"][0]["id"], "A");
	EXPECT_EQ(g["cases"][0]["verdict"], "pass");
	EXPECT_FALSE(g["complete"].get<bool>());
	for (const auto &f : fs::recursive_directory_iterator(out))
		EXPECT_EQ(f.path().filename().string().find(".tmp"), std::string::npos) << f.path();
}

// A pin the module keeps when case C releases it (pinmatrix.ko's leak_pins,
// --fault kernel-leak-pin-at=C), as a pinner that forgets to unpin does:
// C FAILs twice over, by its page (still maybe_dma_pinned with every pin
// released) and by the machine's pin count (more FOLL_PINs held once its
// process was gone); the other cases' counts balance, and they PASS.
TEST(VmFaults, APinLeftBehindFailsItsCaseAndNoOther)
{
	require_vm();
	auto dir = out_dir("kernel-leak-pin");
	auto r = run_pinmatrix("vm --cases A,B,C,fork/child-writes-private --fault kernel-leak-pin-at=C --out " +
			       dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	const auto &c = case_by_id(doc, "C");
	EXPECT_EQ(c["verdict"], "fail");
	const std::string reason = c.value("reason", "");
	EXPECT_NE(reason.find("a pin outlived its release"), std::string::npos) << reason;
	// One pin for the case's first pin, and one for each of its timed
	// repeats, which take the same first pin again.
	EXPECT_NE(reason.find("the case left "), std::string::npos) << reason;
	EXPECT_GE(c["pin_balance"]["kept"].get<int>(), 1) << c.dump(2);
	for (const char *id : {"A", "B", "fork/child-writes-private"}) {
		const auto &other = case_by_id(doc, id);
		EXPECT_EQ(other["verdict"], "pass") << id << ": " << other.value("reason", "");
		EXPECT_EQ(other["pin_balance"]["kept"], 0) << id << ": " << other.dump(2);
	}
}

namespace {

// Whether a process is gone (or a zombie no one reaped yet).
bool process_gone(pid_t pid)
{
	std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
	std::string line;
	if (!std::getline(stat, line))
		return true;
	const auto paren = line.rfind(')');
	return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

} // namespace

// pinmatrix killed from outside while its guest runs (SIGTERM from a CI
// job's timeout, SIGKILL from the OOM killer): no destructor runs, and its
// QEMU must not run on without it (PR_SET_PDEATHSIG). Without that, QEMU
// ran on, a full guest no one would ever stop.
TEST(VmFaults, AKilledRunLeavesNoQemuBehind)
{
	require_vm();
	for (int sig : {SIGTERM, SIGKILL}) {
		auto dir = out_dir(std::string("killed-run-") + sigabbrev_np(sig));
		const std::string bin = PINMATRIX_BIN;
		const std::string out = dir.string();
		const pid_t run = fork();
		ASSERT_GE(run, 0);
		if (run == 0) {
			const int null = ::open("/dev/null", O_WRONLY);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			execl(bin.c_str(), bin.c_str(), "vm", "--cases", "B", "--fault", "hang-at=B", "--case-timeout",
			      "600", "--out", out.c_str(), static_cast<char *>(nullptr));
			_exit(127);
		}
		pid_t qemu = 0;
		for (int i = 0; i < 1800 && !qemu; i++) {
			qemu = qemu_pid_of(dir);
			if (!qemu)
				std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
		ASSERT_EQ(kill(run, sig), 0);
		ASSERT_EQ(waitpid(run, nullptr, 0), run);
		ASSERT_GT(qemu, 0) << "no QEMU pid file within 180 s";
		bool gone = false;
		for (int i = 0; i < 100 && !gone; i++) {
			gone = process_gone(qemu);
			if (!gone)
				std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
		EXPECT_TRUE(gone) << sigabbrev_np(sig) << ": QEMU " << qemu << " still runs 10 s after pinmatrix ended";
		if (!gone && qemu_pid_of(dir) == qemu)
			kill(qemu, SIGKILL);	// ours: the test's own run started it
	}
}

// SPDX-License-Identifier: GPL-2.0
// The one table of kernel-log lines that fail a run (lib/kernel_log.cpp):
// the debug kernel's reports count, its boot banners do not.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_log.hpp"

using pinmatrix::kernel_alarms;

TEST(KernelLog, DebugKernelReportsAreAlarms)
{
	// Headlines as 6.1 prints them (KASAN, lockdep, DEBUG_ATOMIC_SLEEP, DEBUG_VM, DEBUG_LIST).
	const std::vector<std::string> reports = {
		"[   41.402113] BUG: KASAN: slab-use-after-free in usim_gem_close+0x2c/0x90 [ualink_sim]",
		"[   41.402113] general protection fault, probably for non-canonical address "
		"0xdffffc0000000001: 0000 [#1] SMP KASAN",
		"[    9.100200] WARNING: possible circular locking dependency detected",
		"[    9.100200] WARNING: inconsistent lock state",
		"[    9.100200] WARNING: suspicious RCU usage",
		"[    9.100200] BUG: sleeping function called from invalid context at mm/slab.h:723",
		"[    9.100200] BUG: scheduling while atomic: pinmatrix/212/0x00000002",
		"[    9.100200] BUG: Bad page state in process pinmatrix  pfn:3015a",
		"[    9.100200] kernel BUG at mm/gup.c:1910!",
		"[    9.100200] list_del corruption. prev->next should be ffff888004a1c0d0",
		"[    9.100200] refcount_t: underflow; use-after-free.",
		"[    9.100200] WARNING: CPU: 0 PID: 212 at mm/gup.c:123 try_grab_folio+0x1c/0x80",
		"[    9.100200] Call Trace:",
	};
	for (const auto &line : reports) {
		const auto found = kernel_alarms("[    0.000000] Linux version 6.1.192-pinmatrix-debug\n" + line + "\n");
		ASSERT_EQ(found.size(), 1u) << line;
		EXPECT_EQ(found[0], line);
	}
}

TEST(KernelLog, BootBannersOfTheCheckersAreNot)
{
	const std::string boot = "[    0.000000] kasan: KernelAddressSanitizer initialized (generic)\n"
				 "[    0.000000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar\n"
				 "[    0.000000] ... MAX_LOCKDEP_SUBCLASSES:  8\n"
				 "[    0.000000] ... MAX_LOCK_DEPTH:          48\n"
				 "[    0.000000]  memory used by lock dependency info: 6365 kB\n"
				 "[    0.310000] stackdepot: allocating hash table of 1048576 entries via kvcalloc\n"
				 "[    3.000000] pinmatrix: loaded, ABI 3";
	EXPECT_TRUE(kernel_alarms(boot).empty());
	EXPECT_TRUE(kernel_alarms("").empty());
}

TEST(KernelLog, EveryReportLineInOrder)
{
	const auto found = kernel_alarms("a\nBUG: KASAN: x\nb\nWARNING: y\nc");
	EXPECT_EQ(found, (std::vector<std::string>{"BUG: KASAN: x", "WARNING: y"}));
}

TEST(KernelLog, StackDumpsOfARequestedTaskDumpAreNot)
{
	// The runner's sysrq 'w' for a case that ran out of time, between its markers.
	const std::string log = std::string("[    9.1] ") + pinmatrix::requested_dump_begins + " (sysrq w, case B)\n"
				"[    9.1] sysrq: Show Blocked State\n"
				"[    9.1] task:pinmatrix       state:D stack:0     pid:130   ppid:113    flags:0x00000002\n"
				"[    9.1] Call Trace:\n"
				"[    9.1]  pm_stall_until_killed+0x4b/0x59 [pinmatrix]\n"
				"[    9.1] BUG: KASAN: x\n"
				"[    9.2] " + pinmatrix::requested_dump_ends + "\n"
				"[    9.3] Call Trace:\n";
	EXPECT_EQ(kernel_alarms(log), (std::vector<std::string>{"[    9.1] BUG: KASAN: x", "[    9.3] Call Trace:"}));
}

// warn_alloc(): a page allocation failure's report (6.1.192, a long-term
// pin's migration target under stress-ng in vm.memory-pressure) is memory
// running short, not a bug; a WARNING in it, or a trace after it, is.
TEST(KernelLog, AnAllocationFailuresStackDumpIsNot)
{
	const std::string report =
		"[   83.594033] pinmatrix: page allocation failure: order:0, "
		"mode:0x144cca(GFP_HIGHUSER_MOVABLE|__GFP_RETRY_MAYFAIL|__GFP_COMP), nodemask=0,cpuset=/,mems_allowed=0\n"
		"[   83.594414] CPU: 0 PID: 222 Comm: pinmatrix Tainted: G           OE      6.1.0-57-amd64 #1\n"
		"[   83.594657] Call Trace:\n"
		"[   83.595290]  <TASK>\n"
		"[   83.595706]  warn_alloc+0x151/0x170\n"
		"[   83.595861]  migrate_pages_batch+0x2fb/0xc70\n"
		"[   83.595900]  </TASK>\n"
		"[   83.595950] Mem-Info:\n";
	EXPECT_TRUE(kernel_alarms(report).empty());
	const std::string after = report + "[   90.000000] WARNING: CPU: 0 PID: 80 at mm/page_alloc.c:4835\n"
					   "[   90.000001] Call Trace:\n";
	EXPECT_EQ(kernel_alarms(after), (std::vector<std::string>{"[   90.000000] WARNING: CPU: 0 PID: 80 at "
								  "mm/page_alloc.c:4835",
								  "[   90.000001] Call Trace:"}));
}

// SPDX-License-Identifier: GPL-2.0
#pragma once

// A matrix's groups as concurrent guests: how many at once this host
// holds (its cores and its available memory against each group's, known
// before any boot), and a runner that starts them up to that many at a
// time and hands their outcomes back in the matrix's order; their lines
// for people, each whole.

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pinmatrix {

struct host_capacity {
	unsigned cores = 1;		// this process may run on (sched_getaffinity)
	unsigned long available_mib = 0;	// MemAvailable
};
host_capacity this_host();

// Guests at once: `requested` if given (>0), else as many as the host's
// cores and memory hold (each guest: one TCG thread per vCPU, its memory
// plus QEMU's own), at least 1, at most one per group. why: for people.
unsigned guests_at_once(unsigned requested, const std::vector<unsigned> &group_memory_mib,
			const std::vector<unsigned> &group_cpus, const host_capacity &host, std::string &why);

// One line for people on stdout, whole even while guests run side by side.
void say_line(const std::string &line);

// Runs job(0..n-1), up to at_once at a time, each on a thread of its own,
// started in order of k (started(k) first, one at a time), and calls
// done(k, result) on the calling thread in order of k, each as soon as it
// and every earlier job have ended. A job that throws stops the start of
// new ones; the running ones end, then the first exception (in order) is
// thrown here.
template <typename Result>
void run_in_order(size_t n, unsigned at_once, const std::function<void(size_t)> &started,
		  const std::function<Result(size_t)> &job, const std::function<void(size_t, Result &)> &done)
{
	std::mutex m;
	std::condition_variable changed;
	std::vector<std::optional<Result>> results(n);
	std::vector<std::exception_ptr> errors(n);
	std::vector<bool> ended(n, false);
	size_t next = 0;
	bool failed = false;
	auto worker = [&] {
		for (;;) {
			size_t k;
			{
				std::lock_guard lock(m);
				if (failed || next == n)
					return;
				k = next++;
				started(k);
			}
			std::optional<Result> r;
			std::exception_ptr e;
			try {
				r.emplace(job(k));
			} catch (...) {
				e = std::current_exception();
			}
			std::lock_guard lock(m);
			results[k] = std::move(r);
			errors[k] = e;
			ended[k] = true;
			failed = failed || e;
			changed.notify_all();
		}
	};
	std::vector<std::jthread> workers;
	for (unsigned i = 0; i < std::max(1u, at_once) && i < n; i++)
		workers.emplace_back(worker);
	std::exception_ptr first;
	for (size_t k = 0; k < n && !first; k++) {
		std::unique_lock lock(m);
		changed.wait(lock, [&] { return ended[k] || (failed && next <= k); });
		if (!ended[k])
			break;	// never started: an earlier job failed
		if (errors[k]) {
			first = errors[k];
			break;
		}
		Result r = std::move(*results[k]);
		lock.unlock();
		done(k, r);
	}
	workers.clear();	// joins
	for (size_t k = 0; k < n && !first; k++)
		if (errors[k])
			first = errors[k];
	if (first)
		std::rethrow_exception(first);
}

} // namespace pinmatrix

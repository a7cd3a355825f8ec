// SPDX-License-Identifier: GPL-2.0
#include "bench_env.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kernel_info.hpp"
#include "proc_pages.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace pinmatrix::bench {

env &env::get()
{
	static env e;
	return e;
}

void env::init(const options &opt)
{
	opt_ = opt;
	// The module: loaded here when absent and a .ko was given (the guest's
	// `pinmatrix run` unloads the one it loaded), unloaded at exit.
	if (!std::filesystem::exists(default_device_path) && !opt.module_ko.empty()) {
		unique_fd fd(::open(opt.module_ko.c_str(), O_RDONLY | O_CLOEXEC));
		if (fd && !syscall(SYS_finit_module, fd.get(), "", 0))
			loaded_module_ = true;
		for (int i = 0; i < 100 && !std::filesystem::exists(default_device_path); i++)
			usleep(10'000);
	}
	try {
		module_.emplace(pin_module::open());
	} catch (const std::exception &e) {
		module_why_ = e.what();
	}
	try {
		device_.emplace(verbs_device::open(opt.device));
	} catch (const std::exception &e) {
		device_why_ = e.what();
	}
	restricted_ = detect_restricted_placement();
	// In the order that needs the least filling first: fresh pages land in
	// ZONE_MOVABLE by themselves, ordinary memory comes next, and CMA only
	// once more CMA than ordinary memory is free in its zone.
	const auto present = restricted_placements();
	const auto has = [&](placement p) { return std::ranges::find(present, p) != present.end(); };
	placements_.clear();
	if (has(placement::movable))
		placements_.push_back(placement::movable);
	placements_.push_back(placement::ordinary);
	if (has(placement::cma))
		placements_.push_back(placement::cma);
}

env::~env()
{
	pressure_ = {};
	module_.reset();
	if (loaded_module_)
		syscall(SYS_delete_module, "pinmatrix", O_NONBLOCK);
}

double share_in(const pin_module &module, const mapping &m, placement p)
{
	const size_t n = m.size() / page_size();
	if (!n)
		return 0;
	size_t in = 0;
	for (const auto &page : module.probe(m.addr(), n))
		in += classify(page) == p;
	return double(in) / double(n);
}

std::string env::steer_towards(placement p)
{
	if (!module_)
		return "no test module: " + module_why_;
	if (steered_ == p)
		return "";
	steered_.reset();
	pressure_ = {};
	constexpr size_t probe_bytes = 1 << 20;
	if (share_in(*module_, populated_pages(probe_bytes), p) >= 0.9) {
		steered_ = p;
		return "";
	}
	// Fresh pages land elsewhere first (ZONE_MOVABLE before ordinary
	// memory; ordinary memory before CMA): fill that and hold it.
	// Auto: all but 256 MiB of MemAvailable, so that a placement fresh
	// pages never reach ends in a skip with a reason, not the OOM killer.
	size_t budget = opt_.pressure_budget_mib << 20;
	if (!budget) {
		const uint64_t available = read_memory_state().mem_available.value_or(0);
		constexpr uint64_t headroom = 256 << 20;
		budget = available > headroom ? available - headroom : 0;
	}
	pressure_ = press_towards(*module_, p, budget);
	// press_towards() stops at the first chunk with one page in p; what
	// is left free where fresh pages go first (fragments) is filled 1 MiB
	// at a time until a fresh MiB lands in p.
	bool steered = false;
	while (pressure_.reached && pressure_.bytes < budget) {
		mapping test = populated_pages(probe_bytes);
		if (share_in(*module_, test, p) >= 0.9) {
			steered = true;
			break;
		}
		pressure_.chunks.push_back(std::move(test));
		pressure_.bytes += probe_bytes;
	}
	if (!steered) {
		const auto held = pressure_.bytes;
		pressure_ = {};
		return "fresh pages do not land in " + std::string(name(p)) + " memory after filling " +
		       size_label(held) + " (budget " + size_label(budget) + ")" +
		       (p == placement::cma ? "; CMA takes fresh pages alone only where it holds more than half "
					      "of its zone's free memory: pinmatrix vm --placement all"
					    : "");
	}
	steered_ = p;
	return "";
}

std::string env::make_room(placement p, size_t bytes, bool migrates)
{
	if (auto why = steer_towards(p); !why.empty())
		return why;
	return fits(p, bytes, migrates);
}

uint64_t free_memory::of(placement p) const
{
	switch (p) {
	case placement::ordinary: return ordinary;
	case placement::movable: return movable;
	case placement::cma: return cma;
	}
	return 0;
}

free_memory read_free_memory()
{
	// Per zone: "pages free N", "high N", "nr_free_cma N".
	struct zone {
		uint64_t free = 0, high = 0, free_cma = 0;
	};
	std::map<std::string, zone> zones;
	std::istringstream in(read_text_file("/proc/zoneinfo"));
	std::string current;
	for (std::string line; std::getline(in, line);) {
		std::istringstream f(line);
		std::vector<std::string> t;
		for (std::string w; f >> w;)
			t.push_back(w);
		if (t.size() >= 4 && t[0] == "Node") {
			current = t.back();
			continue;
		}
		if (current.empty() || t.size() < 2)
			continue;
		auto num = [&](const std::string &s) { return uint64_t(std::strtoull(s.c_str(), nullptr, 10)); };
		if (t.size() == 3 && t[0] == "pages" && t[1] == "free")
			zones[current].free = num(t[2]);
		else if (t.size() == 2 && t[0] == "high")
			zones[current].high = num(t[1]);
		else if (t.size() == 2 && t[0] == "nr_free_cma")
			zones[current].free_cma = num(t[1]);
	}
	const uint64_t ps = page_size();
	free_memory m;
	for (const auto &[name, z] : zones) {
		const uint64_t usable = z.free > z.high ? z.free - z.high : 0;
		const uint64_t cma = std::min(usable, z.free_cma);
		m.cma += cma * ps;
		if (name == "Movable")
			m.movable += (usable - cma) * ps;
		else
			m.ordinary += (usable - cma) * ps;
	}
	return m;
}

std::string fits(placement p, size_t bytes, bool migrates)
{
	const auto m = read_free_memory();
	const uint64_t need = bytes + bytes / 8 + (16 << 20);
	std::string why;
	if (m.of(p) < need)
		why = size_label(bytes) + " of fresh " + std::string(name(p)) + " pages do not fit: " +
		      size_label(m.of(p)) + " free there (above the high watermark), " + size_label(need) +
		      " needed";
	else if (migrates && p != placement::ordinary && m.ordinary < need)
		why = "the migration of " + size_label(bytes) + " out of " + std::string(name(p)) +
		      " memory needs " + size_label(need) + " of ordinary memory, " + size_label(m.ordinary) +
		      " free";
	if (!why.empty())
		why += " (a bigger guest: pinmatrix vm --bench --memory MiB)";
	return why;
}

fresh_pages map_fresh(const pin_module &module, placement p, size_t bytes)
{
	fresh_pages f;
	f.pages = bytes / page_size();
	// The previous iteration's pages (migration targets, in ordinary
	// memory) sit on the per-CPU free lists and are handed out first: a
	// mapping that took them is set aside, held until the iteration ends.
	for (int attempt = 0; attempt < fresh_attempts; attempt++) {
		if (attempt)
			f.aside.push_back(std::move(f.map));
		f.map = populated_pages(bytes);
		f.in_placement = share_in(module, f.map, p);
		if (f.in_placement >= fresh_share)
			break;
	}
	return f;
}

std::optional<fresh_pages> fresh_or_skip(benchmark::State &state, const pin_module &module, placement p,
					 size_t bytes)
{
	fresh_pages f = map_fresh(module, p, bytes);
	if (auto why = f.shortfall(p); !why.empty()) {
		state.SkipWithError(why.c_str());
		return std::nullopt;
	}
	return f;
}

std::string fresh_pages::shortfall(placement p) const
{
	if (in_placement >= fresh_share)
		return "";
	return "only " + std::to_string(int(in_placement * 100)) + "% of " + size_label(pages * page_size()) +
	       " of fresh pages landed in " + std::string(name(p)) + " memory (" +
	       std::to_string(fresh_attempts) + " attempts)";
}

std::string size_label(uint64_t bytes)
{
	char buf[32];
	if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
		std::snprintf(buf, sizeof(buf), "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes >= (1 << 20))
		std::snprintf(buf, sizeof(buf), "%llu MiB", (unsigned long long)(bytes >> 20));
	else
		std::snprintf(buf, sizeof(buf), "%llu KiB", (unsigned long long)(bytes >> 10));
	return buf;
}

int64_t iterations(int64_t n)
{
	return std::max<int64_t>(1, int64_t(std::llround(double(n) * env::get().opts().iterations_scale)));
}

int64_t iterations_for(int64_t bytes)
{
	return iterations(std::clamp<int64_t>((int64_t(256) << 20) / std::max<int64_t>(bytes, 1), 3, 500));
}

std::vector<int64_t> pinning_sizes()
{
	std::vector<int64_t> s;
	for (int64_t b = min_size; b <= max_size; b *= 4)
		s.push_back(b);
	return s;
}

void set_pin_counters(benchmark::State &state, int64_t total_ns, double in_placement_sum, size_t pages)
{
	const double it = double(state.iterations());
	if (it <= 0 || !pages)
		return;
	state.counters["ns_per_page"] = double(total_ns) / (it * double(pages));
	state.counters["in_placement"] = in_placement_sum / it;
	state.counters["pages"] = double(pages);
}

} // namespace pinmatrix::bench

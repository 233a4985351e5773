// The runs table on a host of a cluster (docs/cluster.md): its instances are placed only once
// this host claimed their range, and a run ends when the journal says every range is done,
// whichever host ran them.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "master/runs.h"
#include "shared/proc.h"

namespace corral::master {
Run& Runs::add_in_order(std::unique_ptr<Run> run) {
  run->clustered = clustered_;
  Run& ref = *run;
  by_id_[ref.id] = &ref;
  auto at = std::upper_bound(runs_.begin(), runs_.end(), ref.seq,
                             [](uint64_t seq, const auto& r) { return seq < r->seq; });
  runs_.insert(at, std::move(run));
  next_seq_ = std::max(next_seq_, ref.seq + 1);
  return ref;
}

Run* Runs::adopt(const journal::RunRow& row) {
  if (find(row.id) != nullptr || row.finished_ms != 0) return nullptr;
  auto built = run_from_journal(journal::StoredRun{row, {}, {}, {}}, true);
  if (!built) {
    spdlog::error("cluster: {}; the run is left out here", built.status().message());
    return nullptr;
  }
  Run& run = add_in_order(std::move(*built));
  unclaimed(run);
  return &run;
}

void Runs::set_cluster_counts(Run& run, const std::map<std::string, uint64_t>& rows) {
  if (!run.clustered || run.finished_ms != 0) return;
  std::array<uint32_t, kInstanceStates> counts{};
  uint64_t seen = 0;
  for (const auto& [state, n] : rows) {
    auto s = instance_state_from(state);
    if (!s) continue;
    counts[static_cast<size_t>(*s)] += static_cast<uint32_t>(std::min<uint64_t>(n, run.size));
    seen += n;
  }
  counts[static_cast<size_t>(InstanceState::kQueued)] +=
      static_cast<uint32_t>(run.size > seen ? run.size - seen : 0);
  uint64_t ended = 0;
  for (size_t s = 0; s < kInstanceStates; ++s) {
    if (is_terminal(static_cast<InstanceState>(s))) ended += counts[s];
  }
  // Every instance ended, a beat ago already, and the run is still open: whether it ended is
  // asked again. Hosts whose last ranges were done at the same moment (their writes held up
  // together, say while the database was away) each asked before the others' were written.
  const bool ended_before = run.cluster_counts.has_value() && run.all_ended_at_last_count;
  run.all_ended_at_last_count = ended >= run.size;
  run.cluster_counts = counts;
  if (ended_before && run.all_ended_at_last_count) finish_if_complete(run.id);
}

void Runs::unclaimed(Run& run) {
  run.clustered = true;
  run.next_fresh = run.size;
  run.requeued.clear();
  run.fresh.clear();
  run.claims.clear();
  run.instances.each(run.size, [&run](uint32_t i, InstanceRecord& in) {
    if (in.state != InstanceState::kRunning) return;
    run.set_state(i, InstanceState::kQueued);  // running on no worker of this host
    in.worker = -1;
  });
}

Result<size_t> Runs::claimed(const journal::StoredRun& page, const std::vector<Range>& ranges) {
  Run* run = find(page.run.id);
  if (run == nullptr) {
    if (page.run.finished_ms != 0) return size_t{0};
    auto built = run_from_journal(journal::StoredRun{page.run, {}, {}, {}}, true);
    if (!built) return built.status();
    run = &add_in_order(std::move(*built));
    unclaimed(*run);
  }
  if (run->finished_ms != 0 || !run->whole || !run->clustered) return size_t{0};
  for (auto [lo, hi] : ranges) {
    for (uint32_t i = lo; i < std::min(hi, run->size); ++i) {
      run->set_state(i, InstanceState::kQueued);
      run->instances.at(i) = InstanceRecord{};
      run->callbacks.erase(i);
    }
  }
  try {
    fill_from_rows(*run, page);
  } catch (const std::exception& e) {
    return invalid_argument("run " + run->id +
                            ": its record in the journal is damaged: " + e.what());
  }
  size_t waiting = 0;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, run->size);
    if (lo >= hi) continue;
    run->claims[lo] = hi;
    size_t in_range = take_claimed(*run, lo, hi);
    if (in_range == 0) range_finished(*run, lo);  // its last instance ended before the claim
    waiting += in_range;
  }
  return waiting;
}

// The instances of a claimed range lo..hi-1, just read: those never started join the fresh
// ones, those that were running (on a host that lost them) resume. Returns how many wait.
size_t Runs::take_claimed(Run& run, uint32_t lo, uint32_t hi) {
  size_t waiting = 0;
  for (uint32_t i = lo; i < hi; ++i) {
    InstanceRecord& in = run.instances.at(i);
    if (is_terminal(in.state)) continue;
    ++waiting;
    bool started = in.started_ms != 0 || in.state == InstanceState::kRunning ||
                   in.detail().checkpoint != nullptr || in.next_step != 0;
    if (!started) {
      if (!run.fresh.empty() && run.fresh.back().second == i) {
        run.fresh.back().second = i + 1;
      } else {
        run.fresh.emplace_back(i, i + 1);
      }
      continue;
    }
    if (in.state == InstanceState::kRunning) {
      // Its host died or was fenced off: it goes on here from where the journal has it. The
      // resume is written with its start, one write instead of two (until then the journal
      // still says running: should this host die first, the next claim resumes it the same).
      run.set_state(i, InstanceState::kQueued);
      in.resumes += 1;
      in.make_detail().resume_reasons.push_back("host_lost");
      in.row_behind = true;
    }
    run.requeued.push_back(i);
  }
  return waiting;
}

std::vector<std::string> Runs::drop_claims() {
  std::vector<std::string> dropped;
  for (auto& r : runs_) {
    Run& run = *r;
    if (!run.clustered || run.finished_ms != 0 || !run.whole) continue;
    bool any = !run.claims.empty();
    run.instances.each(run.size, [&any](uint32_t, const InstanceRecord& in) {
      any = any || in.state == InstanceState::kRunning;
    });
    unclaimed(run);
    if (any) dropped.push_back(run.id);
  }
  return dropped;
}

void Runs::range_finished(Run& run, uint32_t index) {
  auto it = run.claims.upper_bound(index);
  if (it == run.claims.begin()) return;
  --it;
  if (index >= it->second) return;
  for (uint32_t i = it->first; i < it->second; ++i) {
    if (!is_terminal(run.instance(i).state)) return;
  }
  const uint32_t lo = it->first;
  run.claims.erase(it);
  journal_write([id = run.id, lo](journal::Store& s) { return s.claim_done(id, lo); }, {run.id});
  finish_if_complete(run.id);
}

void Runs::finish_if_complete(const std::string& id) {
  if (journal_ == nullptr) return;
  auto complete = std::make_shared<Result<bool>>(false);
  // Only once this host's writes are in: a read past a failed commit would not see its own
  // last ranges done.
  journal_->read_committed([complete, id](journal::Store& s) { *complete = s.run_complete(id); },
                           [this, complete, id] {
                             if (!*complete) {
                               spdlog::warn("run {}: cannot tell whether it ended: {}", id,
                                            complete->status().message());
                             } else if (**complete) {
                               finish_from_journal(id);
                             }
                           });
}

// Every range is done: the run ends here, with its summary summed up by the database (most of
// its rows were written by other hosts): its instances by state, their durations' percentiles
// and its most common failures, in three queries whatever the run's size. The run is then held
// as its summary, like an older finished run: its instances are read from the journal when
// asked for.
void Runs::finish_from_journal(const std::string& id) {
  auto tally = std::make_shared<Result<journal::RunTally>>(Status(Code::kInternal, "not read"));
  journal_->read_committed([tally, id](journal::Store& s) { *tally = s.tally_run(id); },
                           [this, tally, id] {
                             if (!*tally) {
                               spdlog::warn("run {}: cannot sum it up to end it: {}", id,
                                            tally->status().message());
                               return;
                             }
                             finish_tallied(id, **tally);
                           });
}

void Runs::finish_tallied(const std::string& id, const journal::RunTally& tally) {
  Run* run = find(id);
  if (run == nullptr || run->finished_ms != 0) return;
  std::array<uint32_t, kInstanceStates> counts{};
  uint64_t rows = 0;
  for (const auto& [state, n] : tally.states) {
    auto s = instance_state_from(state);
    if (!s || !is_terminal(*s)) {
      spdlog::warn("run {}: every range is done, but the journal holds {} instances {}", id, n,
                   state);
      return;
    }
    counts[static_cast<size_t>(*s)] += static_cast<uint32_t>(n);
    rows += n;
  }
  if (rows < run->size) {
    spdlog::warn("run {}: every range is done, but {} instances have no row in the journal", id,
                 run->size - rows);
    return;
  }
  unclaimed(*run);
  run->counts = counts;
  run->durations_ms.clear();
  run->failures.clear();
  run->whole = false;
  run->instances.clear();
  on_finished(*run, unix_ms_now(), &tally);
}

void Runs::finished_elsewhere(const journal::RunRow& row) {
  Run* run = find(row.id);
  if (run == nullptr || run->finished_ms != 0 || row.finished_ms == 0) return;
  auto built = run_from_journal(journal::StoredRun{row, {}, {}, {}}, false);
  if (!built) {
    spdlog::warn("{}", built.status().message());
    return;
  }
  (*built)->clustered = true;
  *run = std::move(**built);
  prune_due_ = true;
}

}  // namespace corral::master

// Before/after timing in one process (scripts/ab_inprocess.sh): two builds of qdq, each in its own
// shared library (ab_case.cpp), loaded side by side and timed in alternating bursts of a few calls.
// On a shared VM whose speed drifts over seconds, separate processes (even alternated) scatter by
// more than the changes being measured; pairs of bursts a few microseconds apart see the same
// machine, so the median of their ratios is steady.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Side {
  int64_t (*prepare)(const char*, int64_t) = nullptr;
  double (*time)(int) = nullptr;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s BEFORE.so AFTER.so ELEMENTS ROUNDS CASE...\n", argv[0]);
    return 2;
  }
  Side sides[2];
  for (int k = 0; k < 2; ++k) {
    // RTLD_DEEPBIND: each library binds to its own copy of qdq, not to the one loaded first.
    void* handle = dlopen(argv[1 + k], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) {
      std::fprintf(stderr, "error: cannot load %s: %s\n", argv[1 + k], dlerror());
      return 1;
    }
    sides[k].prepare = reinterpret_cast<int64_t (*)(const char*, int64_t)>(dlsym(handle, "qdq_ab_prepare"));
    sides[k].time = reinterpret_cast<double (*)(int)>(dlsym(handle, "qdq_ab_time"));
    if (sides[k].prepare == nullptr || sides[k].time == nullptr) {
      std::fprintf(stderr, "error: %s lacks qdq_ab_prepare/qdq_ab_time\n", argv[1 + k]);
      return 1;
    }
  }
  const int64_t elements = std::stoll(argv[3]);
  const int rounds = std::max(1, std::stoi(argv[4]));
  // Bursts of about 100 µs: long enough for the clock, short next to the machine's drift.
  int status = 0;
  std::printf("%-52s %12s %12s %8s %8s\n", "case", "before Ge/s", "after Ge/s", "after/", "(min)");
  for (int a = 5; a < argc; ++a) {
    int64_t n[2];
    for (int k = 0; k < 2; ++k) n[k] = sides[k].prepare(argv[a], elements);
    if (n[0] == 0 || n[0] != n[1]) {
      std::fprintf(stderr, "error: no case named '%s' in both builds\n", argv[a]);
      status = 1;
      continue;
    }
    const int calls = static_cast<int>(std::clamp<int64_t>(int64_t{10000000} / n[0], 1, 100));
    for (int k = 0; k < 2; ++k) sides[k].time(5 * calls);  // warm up caches and the thread pool
    std::vector<double> t[2], speedup;
    for (int r = 0; r < rounds; ++r) {
      // Alternate which side goes first, so that neither always follows the other.
      const int first = r % 2;
      double ns[2];
      ns[first] = sides[first].time(calls);
      ns[1 - first] = sides[1 - first].time(calls);
      for (int k = 0; k < 2; ++k) t[k].push_back(ns[k]);
      speedup.push_back(ns[0] / ns[1]);
    }
    const double before = n[0] / median(t[0]), after = n[1] / median(t[1]);
    const double best = *std::min_element(t[0].begin(), t[0].end()) / *std::min_element(t[1].begin(), t[1].end());
    std::printf("%-52s %12.2f %12.2f %7.3fx %7.3fx\n", argv[a], before, after, median(speedup), best);
  }
  std::printf(
      "after/: median over rounds of (before time / after time) in adjacent bursts; (min): the same "
      "from each side's fastest burst\n");
  return status;
}

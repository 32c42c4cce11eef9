// crashdemo: a program that crashes and reports its own backtrace as
// symbolizer markup. Run it, then read the crash with
//     ./crashdemo 2>&1 | stackmark symbolize --obj crashdemo --obj libgeo.so
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "geo.hpp"
#include "markup_log.hpp"

namespace {

struct Report {
  const char* title;
  int shapes;
  double min_area;
};

Report g_report = {"quarterly floor plan", 0, 1.0};

// The fault handler: everything it prints is raw addresses as markup.
void on_fault(int sig, siginfo_t* info, void* context) {
  const int fd = STDERR_FILENO;
  const auto* uc = static_cast<const ucontext_t*>(context);
  const greg_t* r = uc->uc_mcontext.gregs;
  const uintptr_t pc = static_cast<uintptr_t>(r[REG_RIP]);

  markup::say(fd, "FATAL: signal %d (%s) at address %p", sig, strsignal(sig), info->si_addr);
  markup::context(fd);
  markup::say(fd, "  fault at {{{pc:%#lx}}} while computing {{{data:%p}}}",
              static_cast<unsigned long>(pc), static_cast<void*>(&g_report));
  markup::say(fd, "  registers: {{{hexdict:");
  markup::say(fd, "    RIP: %#18lx RSP: %#18lx RBP: %#18lx", static_cast<unsigned long>(r[REG_RIP]),
              static_cast<unsigned long>(r[REG_RSP]), static_cast<unsigned long>(r[REG_RBP]));
  markup::say(fd, "    RDI: %#18lx RSI: %#18lx RAX: %#18lx", static_cast<unsigned long>(r[REG_RDI]),
              static_cast<unsigned long>(r[REG_RSI]), static_cast<unsigned long>(r[REG_RAX]));
  markup::say(fd, "  }}}");

  // backtrace() walks through the signal frame; frames before the
  // interrupted pc are this handler's own, so they are skipped.
  void* frames[64];
  const int count = backtrace(frames, 64);
  int first = 0;
  for (int i = 0; i < count; ++i)
    if (reinterpret_cast<uintptr_t>(frames[i]) == pc) first = i;
  markup::say(fd, "backtrace:");
  for (int i = first; i < count; ++i)
    markup::say(fd, "  {{{bt:%d:%p:%s}}}", i - first, frames[i], i == first ? "pc" : "ra");

  signal(sig, SIG_DFL);
  raise(sig);
}

void install_fault_handler() {
  void* warm_up[1];
  backtrace(warm_up, 1);  // loads the unwinder now, not inside the handler
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &action, nullptr);
  sigaction(SIGBUS, &action, nullptr);
}

__attribute__((noinline)) double run_report(const std::vector<const geo::Shape*>& shapes) {
  g_report.shapes = static_cast<int>(shapes.size());
  markup::say(STDERR_FILENO, "report '%s': %d shapes", g_report.title, g_report.shapes);
  const double total = geo::total_area(shapes, g_report.min_area);
  markup::say(STDERR_FILENO, "report '%s' done", g_report.title);  // (not a tail call)
  return total;
}

}  // namespace

int main() {
  install_fault_handler();
  static const geo::Point kitchen[] = {{0, 0}, {4, 0}, {4, 3}, {0, 3}};
  geo::Square hall("hall", 2.5);
  geo::Polygon kitchen_poly("kitchen", kitchen, 4);
  geo::Polygon attic("attic", nullptr, 5);  // the bug: no points
  const std::vector<const geo::Shape*> shapes = {&hall, &kitchen_poly, &attic};
  markup::say(STDERR_FILENO, "starting: %d shapes loaded", static_cast<int>(shapes.size()));
  const double total = run_report(shapes);
  markup::say(STDERR_FILENO, "total area %.2f", total);
  return 0;
}

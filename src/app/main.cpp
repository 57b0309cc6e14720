// vortexhit: decaying homogeneous isotropic turbulence by a vortex particle method and a
// pseudo-spectral method from the same initial field (see README.md).
//
//   vortexhit run [DECK] [--section.key=value ...] [--quiet] [--dry-run]
//   vortexhit compare RUN_DIR [--solvers A,B] | RUN_A RUN_B [--solver S]  [OPTIONS]
//   vortexhit help
//
// Exit status: 0 success, 1 a check or comparison failed (or an internal error), 2 bad
// input, 3 the run stopped itself.
//
// Under mpirun (`mpirun -np R vortexhit run DECK`, the spectral solver) every rank runs
// `run`; bad input is seen by every rank alike, so rank 0 alone prints its one line and all
// exit with 2; an error seen by one rank only ends the job (MPI_Abort). One rank needs no
// mpirun and no MPI (base/comm.h MpiSession). Ranks on one node share its cores: where
// OMP_NUM_THREADS is not set, each takes its share of the cores it may run on.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "app/compare.h"
#include "app/deck.h"
#include "app/run.h"
#include "base/comm.h"
#include "base/error.h"

namespace {

const std::string kUsage =
    std::string("usage: vortexhit run [DECK] [--section.key=value ...] [--quiet] [--dry-run]\n"
    "       vortexhit run --restart RUN_DIR|CHECKPOINT [--section.key=value ...]\n") + vh::app::kCompareUsage +
    "       vortexhit help            list every deck key with its type, default and meaning\n";

int dispatch(const std::vector<std::string>& args) {
  if (args.empty()) {
    if (vh::Comm::world().root()) std::cerr << kUsage;
    return 2;
  }
  const std::string& cmd = args[0];
  const int ranks = vh::Comm::world().size();
  if (ranks > 1 && cmd != "run")
    throw vh::InputError("vortexhit " + cmd + " on " + std::to_string(ranks) +
                         " ranks (allowed under mpirun: run; the rest needs one rank, no mpirun)");
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::cout << kUsage << "\n" << vh::app::help_text();
    return 0;
  }
  if (cmd == "run") {
    std::string deck, restart;
    std::vector<std::string> overrides;
    bool quiet = false, dry_run = false;
    for (std::size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--quiet") {
        quiet = true;
      } else if (a == "--dry-run") {
        dry_run = true;  // check the deck and the memory, print the estimate, write nothing
      } else if (a == "--restart" || a.rfind("--restart=", 0) == 0) {
        if (a == "--restart" && i + 1 >= args.size())
          throw vh::InputError("command line: --restart needs a checkpoint file or run folder");
        restart = a == "--restart" ? args[++i] : a.substr(10);
      } else if (a.rfind("--", 0) == 0) {
        // --key=value, or --key value
        if (a.find('=') == std::string::npos && i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
          overrides.push_back(a + "=" + args[++i]);
        else
          overrides.push_back(a);
      } else if (deck.empty()) {
        deck = a;
      } else {
        throw vh::InputError("command line: a second deck '" + a + "' (allowed: one DECK)");
      }
    }
    if (!restart.empty() && !deck.empty())
      throw vh::InputError("command line: give a DECK or --restart, not both (a restart uses the checkpoint's deck)");
    return vh::app::run(deck, overrides, quiet, restart, args, dry_run);
  }
  if (cmd == "compare") return vh::app::compare({args.begin() + 1, args.end()});
  throw vh::InputError("command line: unknown command '" + cmd + "' (allowed: run, compare, help)");
}

}  // namespace

int main(int argc, char** argv) {
  vh::MpiSession mpi(&argc, &argv);
  const vh::Comm world = vh::Comm::world();
  // Without it every rank would start a thread per core (mpirun --bind-to none): R ranks of a
  // node then run R times as many threads as it has cores, and their spinning at the barriers
  // made the host statistics of a 2-GPU run 8x slower (sc09 at 128^3: 24.5 s against 2.95 s).
  if (world.local_size() > 1 && !std::getenv("OMP_NUM_THREADS"))
    omp_set_num_threads(std::max(1, omp_get_num_procs() / world.local_size()));
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return dispatch(args);
  } catch (const vh::InputError& e) {
    if (world.root()) std::cerr << "vortexhit: error: " << e.what() << "\n";
    return 2;
  } catch (const vh::RunStopped& e) {
    if (world.root()) std::cerr << "vortexhit: stopped: " << e.what() << "\n";
    return 3;
  } catch (const vh::SharedError& e) {  // every rank has it (rank 0's file output failed)
    if (world.root()) std::cerr << "vortexhit: internal error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "vortexhit: internal error" << (world.size() > 1 ? " on rank " + std::to_string(world.rank()) : "")
              << ": " << e.what() << "\n";
    if (world.size() > 1) world.abort(1);  // the other ranks may wait for this one
    return 1;
  }
}

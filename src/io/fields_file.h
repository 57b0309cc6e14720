// fields_<index>.h5 + .xdmf: velocity, vorticity and Q on the grid for ParaView/VisIt
// (docs/design.md "Files a run writes", docs/style.md "Fields for ParaView/VisIt").
//
//   fields_0007.h5   attribute t (double) on /
//     /<solver>/velocity   double [N][N][N][3]  index [z][y][x][component], x fastest:
//                          value of component c at grid point (i, j, k) is at [k][j][i][c]
//     /<solver>/vorticity  double [N][N][N][3]  the same order
//     /<solver>/Q          double [N][N][N]     [z][y][x]
//     attributes t (double) and step (int64) on each /<solver>
//   fields_0007.xdmf       XDMF 3: a spatial collection of one 3DCoRectMesh grid per solver
//                          (ORIGIN_DXDYDZ, origin 0, spacing h = 2π/N, node-centred,
//                          Dimensions "N N N"), HDF paths relative to the .xdmf
//   fields.xdmf            temporal collection over every fields_*.h5 in the folder, so
//                          ParaView animates the run
//
// The index is zero-padded to 4 digits (more when it needs them). The point at x = 2π is not
// repeated (periodic), so the mesh spans [0, 2π − h] in each direction. Units are the
// code's: velocity in box units per time unit, vorticity per time unit, Q per time².
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/grid.h"

namespace vh {

struct Slab;  // core/slab.h

/// The fields of one solver at one output. A null pointer leaves that dataset out.
struct FieldSet {
  const VectorField* velocity = nullptr;
  const VectorField* vorticity = nullptr;
  const ScalarField* q = nullptr;
  std::int64_t step = 0;  ///< the solver's step count at this output
};

/// "fields_0007" for index 7: the stem of both file names.
std::string fields_stem(int index);

/// Writes `dir/fields_<index>.h5` and its `.xdmf` (each atomically), then rewrites
/// `dir/fields.xdmf` over all fields files now in `dir`. `solvers` maps a solver name
/// ("initial", "spectral", "vortex") to its fields; one or two entries usually. `t` is the
/// output time. Returns the path of the .h5. Throws vh::LibraryError on I/O failure and
/// std::invalid_argument for an empty map or fields on grids of different N within a solver.
std::string write_fields(const std::string& dir, int index, double t,
                         const std::map<std::string, FieldSet>& solvers);
/// The same for fields spread over the ranks of `slab` (each holding its z-planes): one file
/// all the same, written by rank 0 as the planes arrive from the ranks that hold them (serial
/// HDF5; README "MPI" says why). Collective; every rank gets rank 0's errors.
std::string write_fields(const std::string& dir, int index, double t,
                         const std::map<std::string, FieldSet>& solvers, const Slab& slab);

/// The XDMF text of one fields file (as write_fields() puts in its sidecar), built from what
/// the .h5 holds; `h5_name` is the name the HDF paths use (relative to the .xdmf).
std::string fields_xdmf(const std::string& h5_path, const std::string& h5_name);

/// Rewrites `dir/fields.xdmf`: a temporal collection over every readable fields_*.h5 in
/// `dir`, by index (called by write_fields(); also useful after a restart).
void write_fields_collection(const std::string& dir);

/// Reads `/<solver>/<name>` (velocity or vorticity) back into SoA form; InputError naming the
/// file and dataset when missing or not [N][N][N][3].
VectorField read_vector_field(const std::string& h5_path, const std::string& solver,
                              const std::string& name);
/// Reads `/<solver>/<name>` (Q) back; InputError when missing or not [N][N][N].
ScalarField read_scalar_field(const std::string& h5_path, const std::string& solver,
                              const std::string& name = "Q");
/// Solver groups in a fields file and their output time (attribute t of each group).
std::map<std::string, double> fields_solvers(const std::string& h5_path);

}  // namespace vh

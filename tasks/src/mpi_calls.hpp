// What distributed.cpp and grad_reducer.cpp share of MPI (internal): the error check of a
// call and the datatype of a gradient's dtype. Only with HKT_WITH_MPI.
#pragma once
#ifndef HKT_WITH_MPI
#define HKT_WITH_MPI 0
#endif
#if HKT_WITH_MPI
#include <mpi.h>

#include "hkt/core/dtype.hpp"

namespace hkt::tasks::detail {

// Throws hkt::Error "<rank prefix><what> failed: <MPI's message>" unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* what);
// MPI_FLOAT or MPI_DOUBLE; throws for other dtypes.
MPI_Datatype mpi_type(DType t);

}  // namespace hkt::tasks::detail
#endif

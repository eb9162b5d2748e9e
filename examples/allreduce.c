/* wafer — SPDX-License-Identifier: MIT
 *
 * allreduce.c: one collective across processes (comm.h). Each process of
 * an MPI job opens a client on the default device, joins one
 * communicator, and sums a vector over all the processes with
 * wafer_comm_all_reduce — queued on the client like any operation, so it
 * is ordered with the kernels around it (here: a fill before, a scale
 * after).
 *
 * The program is an MPI program of its own: it initialises MPI, and
 * wafer then runs on the program's MPI instead of starting it (on cpu,
 * through cpu-mpi.so). Rank 0 makes the communicator id and MPI_Bcast
 * hands it to the others: on cpu the id is all zeros (MPI needs none),
 * on cuda it is NCCL's, so the same code runs on either backend.
 *
 *   mpicc allreduce.c $(pkg-config --cflags --libs wafer) -o allreduce
 *   mpirun -np 4 ./allreduce
 *   mpirun -np 4 ./uninstalled examples/allreduce   (from a build tree)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/comm.h>
#include <wafer/ops.h>
#include <wafer/wafer.h>

#define N 1000

static void check(wafer_status status, const char *what)
{
	if (status != WAFER_OK) {
		fprintf(stderr, "allreduce: %s: %s: %s\n", what,
			wafer_status_string(status), wafer_last_error());
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

#define CHECK(call) check((call), #call)

int main(int argc, char **argv)
{
	int level, rank, size, wrong = 0, wrong_anywhere;
	wafer_runtime *runtime;
	wafer_client *client;
	wafer_comm *comm;
	wafer_comm_id id = {{0}};
	wafer_tensor x, y;
	uint64_t n = N;
	static float host[N];

	/* MPI_THREAD_MULTIPLE: wafer may issue the collective from the
	 * client's worker thread while this one goes on. */
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	CHECK(wafer_runtime_open(NULL, &runtime));
	CHECK(wafer_client_open(runtime, "default", NULL, &client));
	if (rank == 0)
		CHECK(wafer_comm_id_create(client, &id));
	MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
	wafer_comm_options options = {
		.struct_size = sizeof options,
		.rank = (uint32_t)rank,
		.size = (uint32_t)size,
		.id = &id,
	};
	CHECK(wafer_comm_open(client, &options, &comm));

	/* Rank r holds r + 1 everywhere; the sum over ranks is
	 * size * (size + 1) / 2, then doubled by the scale. */
	CHECK(wafer_op_fill(client, WAFER_DTYPE_F32, 1, &n, rank + 1.0, &x));
	CHECK(wafer_comm_all_reduce(comm, x.handle, x.handle, N,
				    WAFER_DTYPE_F32, WAFER_REDUCE_SUM));
	CHECK(wafer_op_mul_scalar(client, &x, WAFER_ALWAYS_COPY, 2.0, &y));
	CHECK(wafer_tensor_read(client, &y, host, sizeof host));

	float want = (float)size * (float)(size + 1);
	for (int i = 0; i < N; i++)
		wrong += host[i] != want;
	MPI_Allreduce(&wrong, &wrong_anywhere, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("%d processes: 2 * sum of (rank + 1) = %g on every rank "
		       "(want %g): %s\n",
		       size, host[0], want,
		       wrong_anywhere ? "WRONG" : "right");

	CHECK(wafer_tensor_release(client, &x));
	CHECK(wafer_tensor_release(client, &y));
	CHECK(wafer_comm_close(comm));
	CHECK(wafer_client_close(client));
	wafer_runtime_close(runtime);
	MPI_Finalize();
	return wrong_anywhere ? 1 : 0;
}

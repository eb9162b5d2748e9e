/* wafer — SPDX-License-Identifier: MIT
 *
 * mlp.c: trains a small multi-layer perceptron on two interleaved spirals
 * with the operations of ops.h — forward pass, backward pass and plain
 * SGD, every step on the device — and shows what buffer donation saves.
 *
 * The network is 2 -> 32 -> 32 -> 2, tanh, softmax and cross-entropy:
 *
 *   h1 = tanh(x W1 + b1)   h2 = tanh(h1 W2 + b2)   p = softmax(h2 W3 + b3)
 *
 * The training runs twice from the same seed, each on a client of its
 * own: once the way a framework with donation would run it (a tensor seen
 * for the last time is passed with WAFER_DONATE_INPUT, so its buffer
 * carries the next result; the SGD update writes the weights in place),
 * once with WAFER_ALWAYS_COPY everywhere and a release after the last use.
 * Both compute the same numbers; the peaks of memory in use differ.
 *
 * With --data-parallel it trains once, data parallel: mpirun starts
 * several copies, each takes its slice of the batch, and the gradients
 * are summed over the processes (wafer_comm_all_reduce, comm.h) before
 * every update, so each takes the step one process takes on the whole
 * batch and they reach its loss. The rank comes from mpirun's
 * environment; wafer brings MPI up itself (wafer-mpi(7)). It needs a
 * backend with collectives (cpu with cpu-mpi.so, cuda with NCCL).
 *
 * With --data-parallel=N the N ranks are in this one process instead:
 * a client on each of the first N devices of the default device's
 * backend (cuda:0 .. cuda:N-1; cpu:0 .. cpu:N-1 with [cpu] devices = N),
 * one communicator over them (wafer_comm_open_group, which hands
 * NCCL's id to every rank itself), and each rank trains on its slice
 * in a thread of its own, as the collectives of one process's
 * communicators must be issued. The same
 * code trains a rank either way (train_rank).
 *
 * --steps=S trains S steps instead of 2,000 (a multiple of 5: the loss is
 * reported six times); the tests train 200 on the CUDA stand-in driver,
 * whose kernels run on the host.
 *
 * --graph captures one training step (without the loss) into a graph
 * after the first step, and replays it for every step that reports
 * nothing (graph.h): the step's launches are issued once, and on cuda
 * replayed as a CUDA graph. It trains once that way and once eagerly, and
 * checks that both reach the same losses. The update writes the weights
 * in place (donation), which is what lets one graph train step after
 * step: each replay reads the weights the last one wrote.
 *
 * --trace=FILE writes a timeline of one training step (the second, the
 * first after the warm-up) to FILE: open it in ui.perfetto.dev, or run
 * `wafer-trace report FILE` (wafer_trace_begin(3)).
 *
 *   cc -pthread mlp.c $(pkg-config --cflags --libs wafer) -lm -o mlp && ./mlp
 *   ./uninstalled examples/mlp        (from a build tree)
 *   mpirun -np 4 ./uninstalled examples/mlp --data-parallel
 *   ./uninstalled examples/mlp --data-parallel=2    (cuda:0 and cuda:1)
 *   ./uninstalled examples/mlp --graph
 *   WAFER_BACKEND=cpu WAFER_CONFIG=two.conf ./uninstalled examples/mlp \
 *       --data-parallel=2    (two.conf: [cpu] devices = 2)
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/comm.h>
#include <wafer/graph.h>
#include <wafer/ops.h>
#include <wafer/trace.h>
#include <wafer/wafer.h>

#define POINTS 128  /* per class */
#define BATCH (2 * POINTS)
#define HIDDEN 32
#define STEPS 2000 /* unless --steps=N */
#define REPORTS 5    /* the loss is reported at step 0 and 5 more times */
#define LEARNING_RATE 0.3

#define KEEP WAFER_ALWAYS_COPY

/* The slice of the batch one process trains on: all of it, or, data
 * parallel, rows [first, first + rows) as rank |rank| of |ranks|. */
struct shard {
	uint32_t rank, ranks;
	uint64_t first, rows;
};

struct mlp {
	wafer_client *client;
	bool donate;
	struct shard shard;
	wafer_comm *comm;        /* data parallel only */
	wafer_tensor x, y, ones; /* data: [R,2], one-hot [R,2], [1,R] (R rows) */
	wafer_tensor w[3], b[3]; /* [2,H] [H,H] [H,2], [H] [H] [2] */
};

static void check(wafer_status status, const char *what)
{
	if (status != WAFER_OK) {
		fprintf(stderr, "mlp: %s: %s: %s\n", what,
			wafer_status_string(status), wafer_last_error());
		exit(1);
	}
}

#define CHECK(call) check((call), #call)

/* How to pass a tensor the caller will not use again: donated, or kept
 * and released right after the call (see done). */
static wafer_copy_semantics give(const struct mlp *m)
{
	return m->donate ? WAFER_DONATE_INPUT : WAFER_ALWAYS_COPY;
}

static void done(const struct mlp *m, const wafer_tensor *t)
{
	if (!m->donate)
		CHECK(wafer_tensor_release(m->client, t));
}

/*===----------------------------------------------------------------------===
 * Data and parameters
 *===----------------------------------------------------------------------===*/

static uint64_t seed = 42;

static double random_uniform(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(seed >> 11) / 9007199254740992.0;
}

static double random_normal(void)
{
	double u = random_uniform() + 1e-12, v = random_uniform();
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* Two spirals, one and a half turns each, a little noise. */
static void make_spirals(float *x, float *y, int *label)
{
	for (int c = 0; c < 2; c++)
		for (int i = 0; i < POINTS; i++) {
			int k = c * POINTS + i;
			double r = 0.1 + 0.9 * i / POINTS;
			double t = 3 * M_PI * i / POINTS + c * M_PI;
			x[2 * k] = (float)(2 * r * cos(t) + 0.04 * random_normal());
			x[2 * k + 1] =
				(float)(2 * r * sin(t) + 0.04 * random_normal());
			y[2 * k] = c == 0;
			y[2 * k + 1] = c == 1;
			label[k] = c;
		}
}

static wafer_tensor upload(wafer_client *c, const float *data, uint32_t rank,
			   uint64_t d0, uint64_t d1)
{
	uint64_t shape[2] = {d0, d1};
	wafer_tensor t;
	CHECK(wafer_tensor_create(c, WAFER_DTYPE_F32, rank, shape, data, &t));
	return t;
}

static void init(struct mlp *m, const float *x, const float *y)
{
	uint64_t first = m->shard.first, rows = m->shard.rows;
	static const uint64_t fan[4] = {2, HIDDEN, HIDDEN, 2};
	float *buf = malloc(HIDDEN * HIDDEN * sizeof *buf);

	seed = 7;
	for (int l = 0; l < 3; l++) {
		uint64_t in = fan[l], out = fan[l + 1];
		double scale = sqrt(1.0 / (double)in);
		for (uint64_t i = 0; i < in * out; i++)
			buf[i] = (float)(scale * random_normal());
		m->w[l] = upload(m->client, buf, 2, in, out);
		CHECK(wafer_op_fill(m->client, WAFER_DTYPE_F32, 1, &out, 0.0,
				    &m->b[l]));
	}
	free(buf);
	m->x = upload(m->client, x + 2 * first, 2, rows, 2);
	m->y = upload(m->client, y + 2 * first, 2, rows, 2);
	uint64_t row[2] = {1, rows};
	CHECK(wafer_op_fill(m->client, WAFER_DTYPE_F32, 2, row, 1.0, &m->ones));
}

/*===----------------------------------------------------------------------===
 * Forward and backward
 *===----------------------------------------------------------------------===*/

/* Data parallel: |t| becomes the sum over the processes of their |t|, in
 * place. One process: nothing to do. A collective takes a handle's first
 * elements, so |t| must be a dense view from the start of its handle (as
 * every result of an operation is). */
static void sum_over_ranks(struct mlp *m, const wafer_tensor *t)
{
	if (!m->comm)
		return;
	if (t->offset || t->strided) {
		fprintf(stderr, "mlp: sum_over_ranks: not a dense view from "
				"the start of its handle\n");
		exit(1);
	}
	CHECK(wafer_comm_all_reduce(m->comm, t->handle, t->handle,
				    wafer_tensor_count(t), t->dtype,
				    WAFER_REDUCE_SUM));
}

/* tanh(in W + b); |in| is kept (the backward pass needs it). */
static wafer_tensor layer(struct mlp *m, const wafer_tensor *in, int l,
			  bool activate)
{
	wafer_tensor z, a;
	CHECK(wafer_op_matmul(m->client, in, KEEP, &m->w[l], KEEP, 0, &z));
	CHECK(wafer_op_add(m->client, &z, give(m), &m->b[l], KEEP, &a));
	done(m, &z);
	if (!activate)
		return a;
	CHECK(wafer_op_tanh(m->client, &a, give(m), &z));
	done(m, &a);
	return z;
}

/* d(loss)/d(pre-activation) from d(loss)/d(h) and h = tanh(.):
 * dh * (1 - h^2). Gives both inputs up. */
static wafer_tensor tanh_backward(struct mlp *m, wafer_tensor *dh,
				  wafer_tensor *h)
{
	wafer_tensor sq, g, dz;
	/* h * h in place: the same dense view twice may be reused. */
	CHECK(wafer_op_mul(m->client, h, m->donate ? WAFER_REUSE_INPUT : KEEP,
			   h, m->donate ? WAFER_REUSE_INPUT : KEEP, &sq));
	CHECK(wafer_tensor_release(m->client, h));
	CHECK(wafer_op_scalar_sub(m->client, 1.0, &sq, give(m), &g));
	done(m, &sq);
	CHECK(wafer_op_mul(m->client, dh, give(m), &g, give(m), &dz));
	done(m, dh);
	done(m, &g);
	return dz;
}

/* param -= rate * grad, in place with donation. Gives |grad| up. */
static void sgd(struct mlp *m, wafer_tensor *param, wafer_tensor *grad)
{
	wafer_tensor step, next;
	CHECK(wafer_op_mul_scalar(m->client, grad, give(m), LEARNING_RATE,
				  &step));
	done(m, grad);
	CHECK(wafer_op_sub(m->client, param, give(m), &step, give(m), &next));
	done(m, param);
	done(m, &step);
	*param = next;
}

/* Gradients of layer l from its input |in| and d(loss)/d(output) |dz|,
 * applied at once; returns d(loss)/d(in) unless l == 0. Gives |dz| up at
 * its last use (not |in|). */
static wafer_tensor layer_backward(struct mlp *m, const wafer_tensor *in,
				   wafer_tensor *dz, int l)
{
	wafer_tensor dw, db, dbias, din = {0};
	uint64_t n = m->b[l].shape[0];
	bool last = l == 0; /* then the bias gradient is dz's last use */

	CHECK(wafer_op_matmul(m->client, in, KEEP, dz, KEEP,
			      WAFER_MATMUL_TRANSPOSE_A, &dw));
	/* Bias: the column sums of dz, as ones[1,B] x dz. */
	CHECK(wafer_op_matmul(m->client, &m->ones, KEEP, dz,
			      last ? give(m) : KEEP, 0, &db));
	if (!last)
		CHECK(wafer_op_matmul(m->client, dz, give(m), &m->w[l], KEEP,
				      WAFER_MATMUL_TRANSPOSE_B, &din));
	done(m, dz);
	CHECK(wafer_tensor_reshape(&db, 1, &n, &dbias));
	/* Each process's gradient covers its rows, scaled by the whole
	 * batch (step): their sum is the whole batch's. */
	sum_over_ranks(m, &dw);
	sum_over_ranks(m, &dbias);
	sgd(m, &m->w[l], &dw);
	sgd(m, &m->b[l], &dbias);
	return din;
}

/* Mean cross-entropy of |p| against the one-hot labels (of the whole
 * batch: data parallel, each process's mean weighted by its share of the
 * rows, summed over the processes). */
static float loss_of(struct mlp *m, const wafer_tensor *p)
{
	wafer_tensor logp, picked, rows, flat, mean;
	uint64_t row[2] = {1, m->shard.rows};
	float loss;

	CHECK(wafer_op_log(m->client, p, KEEP, &logp));
	CHECK(wafer_op_mul(m->client, &logp, give(m), &m->y, KEEP, &picked));
	done(m, &logp);
	CHECK(wafer_op_reduce_sum(m->client, &picked, give(m), &rows));
	done(m, &picked);
	CHECK(wafer_tensor_reshape(&rows, 2, row, &flat));
	CHECK(wafer_op_reduce_mean(m->client, &flat, give(m), &mean));
	done(m, &rows);
	if (m->comm) {
		wafer_tensor share;
		CHECK(wafer_op_mul_scalar(m->client, &mean, give(m),
					  (double)m->shard.rows / BATCH,
					  &share));
		done(m, &mean);
		sum_over_ranks(m, &share);
		mean = share;
	}
	CHECK(wafer_tensor_read(m->client, &mean, &loss, sizeof loss));
	CHECK(wafer_tensor_release(m->client, &mean));
	return -loss;
}

static float accuracy_of(struct mlp *m, const wafer_tensor *p,
			 const int *label)
{
	float probs[BATCH * 2]; /* not static: a rank per thread */
	uint64_t rows = m->shard.rows;
	float right = 0;

	CHECK(wafer_tensor_read(m->client, p, probs,
				2 * rows * sizeof probs[0]));
	for (uint64_t k = 0; k < rows; k++)
		right += (probs[2 * k + 1] > probs[2 * k]) ==
			 label[m->shard.first + k];
	if (m->comm) { /* the right answers of every process */
		wafer_tensor count;
		uint64_t one = 1;
		CHECK(wafer_tensor_create(m->client, WAFER_DTYPE_F32, 1, &one,
					  &right, &count));
		sum_over_ranks(m, &count);
		CHECK(wafer_tensor_read(m->client, &count, &right,
					sizeof right));
		CHECK(wafer_tensor_release(m->client, &count));
	}
	return right / BATCH;
}

/* One step of full-batch gradient descent; the loss when asked. */
static void step(struct mlp *m, bool report, const int *label,
		 float *out_loss, float *out_accuracy)
{
	wafer_tensor h1 = layer(m, &m->x, 0, true);
	wafer_tensor h2 = layer(m, &h1, 1, true);
	wafer_tensor logits = layer(m, &h2, 2, false);
	wafer_tensor p, dlogits, scaled;

	CHECK(wafer_op_softmax(m->client, &logits, give(m), &p));
	done(m, &logits);
	if (report) {
		*out_loss = loss_of(m, &p);
		*out_accuracy = accuracy_of(m, &p, label);
	}
	/* d(mean cross-entropy)/d(logits) = (p - y) / B */
	CHECK(wafer_op_sub(m->client, &p, give(m), &m->y, KEEP, &dlogits));
	done(m, &p);
	CHECK(wafer_op_mul_scalar(m->client, &dlogits, give(m), 1.0 / BATCH,
				  &scaled));
	done(m, &dlogits);

	wafer_tensor dh2 = layer_backward(m, &h2, &scaled, 2);
	wafer_tensor dz2 = tanh_backward(m, &dh2, &h2);
	wafer_tensor dh1 = layer_backward(m, &h1, &dz2, 1);
	wafer_tensor dz1 = tanh_backward(m, &dh1, &h1);
	layer_backward(m, &m->x, &dz1, 0);
}

/* Fills |m| for training on |client| (with |comm|, data parallel; else
 * NULL) on |shard|'s rows. Not thread-safe (init draws from |seed|). */
static void setup(struct mlp *m, wafer_client *client, wafer_comm *comm,
		  bool donate, const struct shard *shard, const float *x,
		  const float *y)
{
	*m = (struct mlp){.client = client, .donate = donate,
			  .shard = *shard, .comm = comm};
	init(m, x, y);
}

/* Trains |m| from its initial weights, fills |losses| (one per report),
 * checks nothing leaked, closes its communicator and client and returns
 * the peak bytes in use. Every rank of a communicator runs this, each
 * in its own process or thread. */
/* Training steps: STEPS, or --steps=N (a multiple of REPORTS; the tests
 * train shorter on the CUDA stand-in, whose kernels run on the host). */
static int steps = STEPS;
/* --trace=FILE: the runtime that records step TRACED_STEP of the first
 * training (rank 0), or NULL. */
#define TRACED_STEP 1
static const char *trace_path;
static wafer_runtime *trace_runtime;
/* --graph: the steps that report nothing are replays of one captured
 * step. */
static bool use_graph;

/* One step without the loss, captured on the client's default queue. */
static wafer_graph *capture_step(struct mlp *m)
{
	wafer_queue *q = wafer_client_default_queue(m->client);
	wafer_graph *graph;

	CHECK(wafer_queue_begin_capture(q));
	step(m, false, NULL, NULL, NULL);
	CHECK(wafer_queue_end_capture(q, &graph));
	return graph;
}

static uint64_t train_rank(struct mlp *m, const int *label, float *losses,
			   bool print)
{
	wafer_memory_usage usage = {.struct_size = sizeof usage};

	wafer_graph *graph = NULL;

	for (int s = 0, r = 0; s <= steps; s++) {
		float loss = 0, accuracy = 0;
		bool report = s % (steps / REPORTS) == 0;
		bool traced = trace_runtime && print && s == TRACED_STEP;
		if (traced)
			CHECK(wafer_trace_begin(trace_runtime, trace_path));
		if (graph && !report)
			CHECK(wafer_graph_launch(
				graph, wafer_client_default_queue(m->client)));
		else
			step(m, report, label, &loss, &accuracy);
		if (use_graph && !graph)
			graph = capture_step(m);
		if (traced) {
			CHECK(wafer_sync(m->client));
			CHECK(wafer_trace_end(trace_runtime));
			trace_runtime = NULL; /* one step */
			printf("step %d traced to %s\n", s, trace_path);
		}
		if (!report)
			continue;
		losses[r++] = loss;
		if (print)
			printf("step %4d  loss %.4f  accuracy %5.1f%%\n", s,
			       loss, 100 * accuracy);
	}
	CHECK(wafer_memory_usage_get(m->client, &usage));
	CHECK(wafer_graph_release(graph));
	const wafer_tensor *all[] = {&m->x, &m->y, &m->ones, &m->w[0],
				     &m->w[1], &m->w[2], &m->b[0], &m->b[1],
				     &m->b[2]};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		CHECK(wafer_tensor_release(m->client, all[i]));
	wafer_memory_usage after = {.struct_size = sizeof after};
	CHECK(wafer_memory_usage_get(m->client, &after));
	if (after.handles_live || after.bytes_in_use) {
		fprintf(stderr, "mlp: %llu handles leaked\n",
			(unsigned long long)after.handles_live);
		exit(1);
	}
	CHECK(wafer_comm_close(m->comm));
	CHECK(wafer_client_close(m->client));
	return usage.peak_in_use;
}

/* Trains from scratch on a new client of the default device, on
 * |shard|'s rows (data parallel, one rank of this process, with
 * |data_parallel|); returns the peak bytes in use and fills |losses|. */
static uint64_t train(wafer_runtime *runtime, bool donate,
		      const struct shard *shard, bool data_parallel,
		      const float *x, const float *y, const int *label,
		      float *losses, bool print)
{
	wafer_client *client;
	wafer_comm *comm = NULL;
	struct mlp m;

	CHECK(wafer_client_open(runtime, "default", NULL, &client));
	if (data_parallel) {
		wafer_comm_options o = {sizeof o, shard->rank, shard->ranks,
					NULL, NULL};
		CHECK(wafer_comm_open(client, &o, &comm));
	}
	setup(&m, client, comm, donate, shard, x, y);
	return train_rank(&m, label, losses, print);
}

/* Rank |rank| of |ranks|: rows split as evenly as they go. */
static struct shard shard_of(uint32_t rank, uint32_t ranks)
{
	struct shard s = {rank, ranks, 0, 0};

	s.first = BATCH * (uint64_t)rank / ranks;
	s.rows = BATCH * (uint64_t)(rank + 1) / ranks - s.first;
	return s;
}

/* This process's slice when mpirun started it (Open MPI and MPICH say
 * the rank in the environment). */
static struct shard shard_from_environment(void)
{
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	const char *ranks = getenv("OMPI_COMM_WORLD_SIZE");

	if (!rank || !ranks) {
		rank = getenv("PMI_RANK");
		ranks = getenv("PMI_SIZE");
	}
	if (rank && ranks && atoi(ranks) > 0)
		return shard_of((uint32_t)atoi(rank), (uint32_t)atoi(ranks));
	return shard_of(0, 1);
}

/*===----------------------------------------------------------------------===
 * Data parallel in one process
 *===----------------------------------------------------------------------===*/

struct rank_thread {
	pthread_t thread;
	struct mlp m;
	const int *label;
	float losses[REPORTS + 1];
};

static void *rank_main(void *arg)
{
	struct rank_thread *r = arg;

	train_rank(&r->m, r->label, r->losses, r->m.shard.rank == 0);
	return NULL;
}

/* |ranks| ranks on devices 0 .. ranks-1 of |backend|, a thread each;
 * fills |losses| with rank 0's (the same on every rank: the loss is
 * summed over them). */
static void train_in_process(wafer_runtime *runtime, const char *backend,
			     uint32_t ranks, const float *x, const float *y,
			     const int *label, float *losses)
{
	struct rank_thread *r = calloc(ranks, sizeof *r);
	wafer_client **clients = calloc(ranks, sizeof *clients);
	wafer_comm **comms = calloc(ranks, sizeof *comms);
	uint32_t have = 0;

	if (!r || !clients || !comms) {
		fprintf(stderr, "mlp: out of host memory\n");
		exit(1);
	}
	for (size_t i = 0; i < wafer_runtime_device_count(runtime); i++) {
		wafer_device_desc d = {.struct_size = sizeof d};
		CHECK(wafer_runtime_device(runtime, i, &d));
		have += !strcmp(d.backend, backend);
	}
	if (have < ranks) {
		fprintf(stderr, "mlp: --data-parallel=%u: %s has %u device%s\n",
			ranks, backend, have, have == 1 ? "" : "s");
		if (strcmp(backend, "cpu") == 0)
			fprintf(stderr, "mlp: for %u ranks in this process set "
				"[cpu] devices = %u in wafer.conf "
				"(wafer-comm(7))\n", ranks, ranks);
		exit(1);
	}
	for (uint32_t i = 0; i < ranks; i++) {
		char selector[64];
		snprintf(selector, sizeof selector, "%s:%u", backend, i);
		CHECK(wafer_client_open(runtime, selector, NULL, &clients[i]));
	}
	CHECK(wafer_comm_open_group(clients, ranks, comms));
	/* Set up one after the other here (init draws from one seed), then
	 * train together: each rank's all-reduce waits for the others'. */
	for (uint32_t i = 0; i < ranks; i++) {
		struct shard shard = shard_of(i, ranks);
		setup(&r[i].m, clients[i], comms[i], true, &shard, x, y);
		r[i].label = label;
	}
	for (uint32_t i = 0; i < ranks; i++)
		if (pthread_create(&r[i].thread, NULL, rank_main, &r[i])) {
			fprintf(stderr, "mlp: cannot start rank %u's thread\n",
				i);
			exit(1);
		}
	for (uint32_t i = 0; i < ranks; i++)
		pthread_join(r[i].thread, NULL);
	memcpy(losses, r[0].losses, sizeof r[0].losses);
	free(comms);
	free(clients);
	free(r);
}

/* Takes --trace=FILE out of the arguments; false when FILE is empty. */
static bool take_trace(int *argc, char **argv)
{
	for (int i = 1; i < *argc; i++) {
		if (strncmp(argv[i], "--trace=", 8) != 0)
			continue;
		trace_path = argv[i] + 8;
		for (int j = i; j < *argc; j++)
			argv[j] = argv[j + 1];
		(*argc)--;
		return *trace_path != 0;
	}
	return true;
}

/* Takes --steps=N out of the arguments; false when N is not a positive
 * multiple of REPORTS. */
static bool take_steps(int *argc, char **argv)
{
	for (int i = 1; i < *argc; i++) {
		if (strncmp(argv[i], "--steps=", 8) != 0)
			continue;
		char *end = NULL;
		long n = strtol(argv[i] + 8, &end, 10);
		if (*end || n < REPORTS || n > 1000000 || n % REPORTS)
			return false;
		steps = (int)n;
		for (int j = i; j < *argc; j++)
			argv[j] = argv[j + 1];
		(*argc)--;
		return true;
	}
	return true;
}

/* Takes --graph out of the arguments. */
static bool take_graph(int *argc, char **argv)
{
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--graph") != 0)
			continue;
		for (int j = i; j < *argc; j++)
			argv[j] = argv[j + 1];
		(*argc)--;
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	static float x[BATCH * 2], y[BATCH * 2];
	static int label[BATCH];
	float with[REPORTS + 1], without[REPORTS + 1];
	wafer_runtime *runtime;
	wafer_device_desc device = {.struct_size = sizeof device};
	wafer_client *probe;
	bool steps_ok = take_steps(&argc, argv) && take_trace(&argc, argv);
	use_graph = take_graph(&argc, argv);
	bool data_parallel = argc > 1 && !strcmp(argv[1], "--data-parallel");
	/* --data-parallel=N: N ranks in this process */
	const char *in_process = argc > 1 && !strncmp(argv[1],
						      "--data-parallel=", 16)
					 ? argv[1] + 16
					 : NULL;
	char *end = NULL;
	unsigned long ranks = in_process ? strtoul(in_process, &end, 10) : 0;
	struct shard whole = {0, 1, 0, BATCH};
	struct shard mine = data_parallel ? shard_from_environment() : whole;
	bool speaker = mine.rank == 0;

	/* N up to BATCH: every rank has a row. */
	/* A capture refuses collectives: --graph trains on one device. */
	if (!steps_ok || argc > 2 || (use_graph && argc > 1) ||
	    (argc > 1 && !data_parallel &&
	     (!in_process || *end || ranks == 0 || ranks > BATCH))) {
		fprintf(stderr, "usage: mlp [--data-parallel | "
				"--data-parallel=N | --graph] [--steps=S] "
				"[--trace=FILE], N from 1 to %d, S a multiple "
				"of %d (default %d)\n",
			BATCH, REPORTS, STEPS);
		return 2;
	}
	make_spirals(x, y, label);
	CHECK(wafer_runtime_open(NULL, &runtime));
	if (trace_path)
		trace_runtime = runtime;
	CHECK(wafer_client_open(runtime, "default", NULL, &probe));
	CHECK(wafer_client_device(probe, &device));
	CHECK(wafer_client_close(probe));
	if (speaker)
		printf("two spirals, %d points; MLP 2-%d-%d-2 (tanh), SGD on "
		       "%s:%u (%s)\n",
		       BATCH, HIDDEN, HIDDEN, device.backend, device.index,
		       device.name);

	if (in_process) {
		printf("data parallel: %lu ranks in this process on %s:0..%lu, "
		       "%llu rows for rank 0\n",
		       ranks, device.backend, ranks - 1,
		       (unsigned long long)shard_of(0, (uint32_t)ranks).rows);
		train_in_process(runtime, device.backend, (uint32_t)ranks, x, y,
				 label, with);
		printf("final loss %.6f\n", with[REPORTS]);
		wafer_runtime_close(runtime);
		return with[REPORTS] < with[0] ? 0 : 1;
	}
	if (data_parallel) {
		if (speaker)
			printf("data parallel: %u processes, %llu rows each "
			       "(rank 0)\n",
			       mine.ranks, (unsigned long long)mine.rows);
		train(runtime, true, &mine, true, x, y, label, with, speaker);
		if (speaker)
			printf("final loss %.6f\n", with[REPORTS]);
		wafer_runtime_close(runtime);
		return with[REPORTS] < with[0] ? 0 : 1;
	}

	if (use_graph) {
		uint64_t peak_graph = train(runtime, true, &whole, false, x, y,
					    label, with, true);
		use_graph = false;
		train(runtime, true, &whole, false, x, y, label, without,
		      false);
		bool same = true;
		for (int r = 0; r <= REPORTS; r++)
			same &= with[r] == without[r];
		printf("final loss %.6f\n", with[REPORTS]);
		printf("graph: one step captured, %d replayed; peak memory in "
		       "use %.1f KiB; %s\n",
		       steps - REPORTS - 1, peak_graph / 1024.0,
		       same ? "same losses as eager"
			    : "LOSSES DIFFER FROM EAGER");
		wafer_runtime_close(runtime);
		return same && with[REPORTS] < with[0] ? 0 : 1;
	}
	uint64_t peak_donate =
		train(runtime, true, &whole, false, x, y, label, with, true);
	uint64_t peak_copy =
		train(runtime, false, &whole, false, x, y, label, without, false);

	bool same = true;
	for (int r = 0; r <= REPORTS; r++)
		same &= with[r] == without[r];
	printf("final loss %.6f\n", with[REPORTS]);
	printf("peak memory in use: %.1f KiB with donation, %.1f KiB without "
	       "(%.0f%% less)%s\n",
	       peak_donate / 1024.0, peak_copy / 1024.0,
	       100.0 * (1.0 - (double)peak_donate / (double)peak_copy),
	       same ? "; same losses both ways" : "; LOSSES DIFFER");
	wafer_runtime_close(runtime);
	return same && with[REPORTS] < with[0] ? 0 : 1;
}

// ggmlref: llama.cpp's own MXFP4 arithmetic, for TestMXFP4LlamaCpp's
// golden file. It loads node-llama-cpp's ggml libraries (the build the
// project is held to) and, for rows of float32 read from stdin, writes
// what they compute: quantize_row_mxfp4_ref's bytes, dequantize_row_mxfp4's
// floats, and ggml_vec_dot_mxfp4_q8_0 of the row with an activation
// quantized by the CPU backend's quantize_row_q8_0.
//
//   cc -O2 -o ggmlref ggmlref.c -ldl
//   ggmlref rows LIBGGML_BASE LIBGGML_CPU < in > out
//     in:  u32 rows, u32 cols, then per row cols float32 weights and cols
//          float32 activations
//     out: per row 17·cols/32 bytes, cols float32, one float32
//   ggmlref log2f
//     every float32 x > 0 (finite) where floorf(log2f(x)) changes, as
//     "%08x %d" lines: its bits and the new floor.
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*from_float_t)(const float *x, void *y, int64_t k);
typedef void (*vec_dot_t)(int n, float *s, size_t bs, const void *x, size_t bx, const void *y, size_t by, int nrc);
struct type_traits_cpu {
	from_float_t from_float;
	vec_dot_t vec_dot;
	int vec_dot_type;
	int64_t nrows;
};
enum { TYPE_Q8_0 = 8, TYPE_MXFP4 = 39 };

static void *sym(void *lib, const char *name) {
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "%s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static void readAll(void *p, size_t n) {
	if (fread(p, 1, n, stdin) != n) {
		fprintf(stderr, "short input\n");
		exit(1);
	}
}

static int rows(const char *basePath, const char *cpuPath) {
	void *base = dlopen(basePath, RTLD_NOW | RTLD_GLOBAL);
	if (!base) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void *cpu = dlopen(cpuPath, RTLD_NOW | RTLD_GLOBAL);
	if (!cpu) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*quantize)(const float *, void *, int64_t) = sym(base, "quantize_row_mxfp4_ref");
	void (*dequantize)(const void *, float *, int64_t) = sym(base, "dequantize_row_mxfp4");
	void (*cpuInit)(void) = sym(cpu, "ggml_cpu_init");
	const struct type_traits_cpu *(*traits)(int) = sym(cpu, "ggml_get_type_traits_cpu");
	cpuInit();
	const struct type_traits_cpu *mx = traits(TYPE_MXFP4), *q8 = traits(TYPE_Q8_0);
	if (mx->vec_dot_type != TYPE_Q8_0) {
		fprintf(stderr, "MXFP4 dots with type %d, not Q8_0\n", mx->vec_dot_type);
		return 1;
	}
	uint32_t n, cols;
	readAll(&n, 4);
	readAll(&cols, 4);
	float *w = malloc(4 * cols), *x = malloc(4 * cols), *deq = malloc(4 * cols);
	unsigned char *wq = malloc(17 * cols / 32), *xq = malloc(34 * cols / 32);
	for (uint32_t r = 0; r < n; r++) {
		readAll(w, 4 * cols);
		readAll(x, 4 * cols);
		quantize(w, wq, cols);
		dequantize(wq, deq, cols);
		q8->from_float(x, xq, cols);
		float dot;
		mx->vec_dot(cols, &dot, 0, wq, 0, xq, 0, 1);
		fwrite(wq, 1, 17 * cols / 32, stdout);
		fwrite(deq, 4, cols, stdout);
		fwrite(&dot, 4, 1, stdout);
	}
	return 0;
}

static int thresholds(void) {
	float prev = -1000;
	for (uint32_t b = 1; b < 0x7f800000u; b++) {
		float x;
		memcpy(&x, &b, 4);
		float f = floorf(log2f(x));
		if (f != prev) {
			printf("%08x %d\n", b, (int)f);
		}
		prev = f;
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 4 && strcmp(argv[1], "rows") == 0) {
		return rows(argv[2], argv[3]);
	}
	if (argc == 2 && strcmp(argv[1], "log2f") == 0) {
		return thresholds();
	}
	fprintf(stderr, "usage: ggmlref rows LIBGGML_BASE LIBGGML_CPU | ggmlref log2f\n");
	return 2;
}

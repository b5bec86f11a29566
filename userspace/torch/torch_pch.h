/* SPDX-License-Identifier: MIT */
/*
 * The torch headers nearly every backend file includes, precompiled once
 * per build (userspace/Makefile, TORCH_PCH) and put first into each file
 * with -include: parsing them was most of a file's compile time. Nothing
 * of ours goes here.
 */
#include <ATen/ATen.h>
#include <torch/library.h>

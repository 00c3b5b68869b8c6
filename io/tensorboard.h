/* TensorBoard event files (rank 0): scalars at global steps, in the format
 * TensorBoard reads (TFRecord-framed Event protocol buffers), so a live
 * TensorBoard shows a running job. */
#pragma once

/* Opens a new event file in dir (created if missing) for a run starting
 * at global step start, which first records that the run (re)starts
 * there, so TensorBoard drops what earlier files of dir logged from step
 * start + 1 on. NULL or "" dir: none. 0, or -1 with a user_error. A write
 * that fails later (a full disk) prints one line and ends the file;
 * training goes on. */
int tensorboard_open(const char *dir, long start);
/* Appends scalar tag (e.g. "train/loss") = value at step; a no-op when no
 * file is open. */
void tensorboard_scalar(const char *tag, long step, double value);
/* Makes what was appended visible to readers. */
void tensorboard_flush(void);
void tensorboard_close(void);

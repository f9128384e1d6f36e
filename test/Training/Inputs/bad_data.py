#!/usr/bin/python3
"""Writes the data files of test/Training/bad-input.test.

  bad_data.py BATCHES.npy OUT_DIR
BATCHES.npy is [steps, batch, seq+1] (the --data-lm layout). Writes
  ids.npy            [steps, batch, seq]  = [:, :, :-1]
  labels.npy         [steps, batch, seq]  = [:, :, 1:]
  labels_ignored.npy labels, the first 4 positions of every row -100
  labels_oob.npy     labels, [1, 1, 5] = 99999 (step 2, row 1, position 5)
  labels_neg.npy     labels, [0, 0, 3] = -1
  ids_short.npy      ids without its last position
  ids_f32.npy        ids as float32
  ids_oob.npy        ids, [1, 1, 5] = 600 (not a row of the 512-token
                     embedding)
"""
import os
import sys

import numpy as np

b = np.load(sys.argv[1])
out = sys.argv[2]
ids, labels = b[:, :, :-1].copy(), b[:, :, 1:].copy()
np.save(os.path.join(out, "ids.npy"), ids)
np.save(os.path.join(out, "labels.npy"), labels)
ignored = labels.copy()
ignored[:, :, :4] = -100
np.save(os.path.join(out, "labels_ignored.npy"), ignored)
oob = labels.copy()
oob[1, 1, 5] = 99999
np.save(os.path.join(out, "labels_oob.npy"), oob)
neg = labels.copy()
neg[0, 0, 3] = -1
np.save(os.path.join(out, "labels_neg.npy"), neg)
np.save(os.path.join(out, "ids_short.npy"), ids[:, :, :-1])
np.save(os.path.join(out, "ids_f32.npy"), ids.astype(np.float32))
oob_ids = ids.copy()
oob_ids[1, 1, 5] = 600
np.save(os.path.join(out, "ids_oob.npy"), oob_ids)

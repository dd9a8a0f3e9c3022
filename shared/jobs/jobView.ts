import { type ImageStore, linkTimes } from '../delivery/imageStore';
import { type Batch, type Job, RESULT_LINK_SECONDS, type StoredResult } from './job';

/** What the views read of the image store: a link to the image and the metadata stored beside it. */
export type JobViewImages = Pick<ImageStore, 'signedUrl' | 'pageMetadata'>;

/** A job exactly as GET /api/jobs/{id} answers it (and as its webhook's `data` carries it). */
export async function jobView(job: Job, images: JobViewImages, now: number) {
  const { result } = job;
  const metadata = result && (await metadataOf(result, images));
  const link = linkTimes(now, RESULT_LINK_SECONDS);
  return {
    id: job.id,
    status: job.status,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    // The `response: "json"` body, with a link valid for an hour from now.
    result: result && {
      url: await images.signedUrl(result.key, link),
      expiresAt: link.expiresAt,
      contentType: result.contentType,
      width: result.width,
      height: result.height,
      bytes: result.bytes,
      etag: result.etag,
      creditsCharged: result.creditsCharged,
      cache: 'BYPASS',
      truncated: result.truncated === true,
      ...(metadata ? { metadata } : {}),
    },
    error: job.error,
    webhook: job.webhook,
  };
}

export type JobView = Awaited<ReturnType<typeof jobView>>;

/**
 * The page metadata of a result that asked for it, in one read. Metadata gone from the store (expired with the image
 * once the job outlives its retention, the table's TTL being late) is left out of the answer, as a gone image is: the
 * job still shows what it stored, and its link then finds nothing.
 */
async function metadataOf(result: StoredResult, images: JobViewImages) {
  return result.metadataStored ? images.pageMetadata(result.key) : undefined;
}

/** A batch exactly as GET /api/batches/{id} answers it. */
export async function batchView(batch: Batch, jobs: Job[], images: JobViewImages, now: number) {
  const counts = { queued: 0, running: 0, succeeded: 0, failed: 0 };
  for (const job of jobs) counts[job.status]++;
  return {
    id: batch.id,
    status: batch.status,
    createdAt: batch.createdAt,
    finishedAt: batch.finishedAt,
    counts,
    jobs: await Promise.all(jobs.map((job) => jobView(job, images, now))),
    // Its batch.completed delivery's, as a job's view shows its own (its jobs have none: one event for the batch).
    webhook: batch.webhook,
  };
}

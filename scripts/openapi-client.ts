// A typed client's use of the API, type-checked by scripts/openapi-check.sh
// against the types openapi-typescript generates from the served OpenAPI
// document (./api). It compiles only if the document declares what these
// calls rely on; it is never run.
import createClient from "openapi-fetch";
import type { paths, components } from "./api";

const client = createClient<paths>({ baseUrl: "http://localhost:8080/api" });

export async function main(): Promise<void> {
  // Record values and rule data are open objects.
  await client.POST("/entities/records", { body: { entityId: "shop.product", values: { title: "Lamp", price: 24.5 } } });
  await client.POST("/business_rules/execute", { body: { entityType: "order", data: { total: 250 } } });
  // A set execution needs entityId and eventType.
  // @ts-expect-error entityId and eventType are missing
  await client.POST("/business_rules/sets/{setId}/execute", { params: { path: { setId: "s" } }, body: { entityType: "order", data: {} } });
  // Record items carry their field values.
  const item: components["schemas"]["RecordItem"] = { id: "1", createdAt: "", updatedAt: "", title: "Lamp" };
  const v: unknown = item["title"];
  // The page's items (with format=csv|json|markdown|xml the route answers
  // a file instead: a string, or for json an array of rows).
  const { data } = await client.GET("/entities/records", { params: { query: { entityId: "shop.product" } } });
  if (data && typeof data !== "string" && !Array.isArray(data)) {
    for (const it of data.items) console.log(it.id, v);
  }
  // Sign in: the body's fields are declared.
  await client.POST("/login", { body: { email: "a@b.c", password: "x" } });
}
